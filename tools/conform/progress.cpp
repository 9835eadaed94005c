#include "progress.hpp"

#include <cstdio>

namespace rlk::conform {

Status worst_status(const std::vector<Record>& records) {
  static constexpr Status kSeverity[] = {Status::failed,     Status::invalid_arguments, Status::unimplemented,
                                         Status::mistrusted, Status::skipped,           Status::passed};
  for (Status status : kSeverity) {
    for (const Record& r : records) {
      if (r.status == status) return status;
    }
  }
  return Status::passed;
}

Progress::Progress(std::size_t total, bool terminal) : total_(total), terminal_(terminal) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::begin(const std::string& gate, const std::string& case_id) {
  case_start_ = std::chrono::steady_clock::now();
  if (!terminal_) return;
  std::fprintf(stderr, "\r\033[K[%s] %zu/%zu  %.1fs  %s", gate.c_str(), done_, total_, elapsed_seconds(), case_id.c_str());
  std::fflush(stderr);
}

void Progress::end(const std::string& case_id, const std::vector<Record>& records) {
  ++done_;
  if (terminal_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - case_start_).count();
  std::fprintf(stderr, "[%zu/%zu %.1fs] %s: %s (%.2fs)\n", done_, total_, elapsed_seconds(), case_id.c_str(),
               std::string(to_string(worst_status(records))).c_str(), seconds);
}

void Progress::finish() {
  if (terminal_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace rlk::conform
