// Progress of a run on stderr: one line rewritten in place on a terminal (gate, cases done /
// total, elapsed), one plain line per finished case otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "record.hpp"

namespace rlk::conform {

class Progress {
 public:
  Progress(std::size_t total, bool terminal);
  void begin(const std::string& gate, const std::string& case_id);
  void end(const std::string& case_id, const std::vector<Record>& records);
  // Ends the in-place line on a terminal.
  void finish();
  double elapsed_seconds() const;

 private:
  std::size_t total_;
  std::size_t done_ = 0;
  bool terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point case_start_ = start_;
};

// The status that represents a case's records: failed over invalid_arguments over
// unimplemented over mistrusted over skipped over passed.
Status worst_status(const std::vector<Record>& records);

}  // namespace rlk::conform
