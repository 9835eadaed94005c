#include "report.hpp"

#include <algorithm>
#include <fstream>

namespace rlk::conform {
namespace {

constexpr std::size_t kRecapFailures = 10;

std::string counts_line(const RunReport& report) {
  std::string line;
  const auto counts = report.counts();
  for (Status status : kAllStatuses) {
    const auto found = counts.find(status);
    line += (line.empty() ? "" : ", ") + std::to_string(found == counts.end() ? 0 : found->second) + " " +
            std::string(to_string(status));
  }
  return line;
}

// How far a failed record is from passing, to pick each gate's worst one.
double badness(const Record& r) {
  for (const char* field : {"worst_tolerance_ratio", "rows_differing", "normalized_error"}) {
    if (r.numbers.contains(field) && r.numbers[field].is_number()) return r.numbers[field].get<double>();
  }
  return 0;
}

std::string one_line(std::string text) {
  std::ranges::replace(text, '\n', ' ');
  std::ranges::replace(text, '|', '/');
  return text;
}

}  // namespace

std::map<Status, std::size_t> RunReport::counts() const {
  std::map<Status, std::size_t> counts;
  for (const Record& r : records) ++counts[r.status];
  return counts;
}

bool RunReport::any_failed() const {
  return std::ranges::any_of(records, [](const Record& r) { return r.status == Status::failed; });
}

nlohmann::json to_json(const RunReport& report) {
  nlohmann::json counts = nlohmann::json::object();
  const auto tally = report.counts();
  for (Status status : kAllStatuses) {
    const auto found = tally.find(status);
    counts[std::string(to_string(status))] = found == tally.end() ? 0 : found->second;
  }
  nlohmann::json records = nlohmann::json::array();
  for (const Record& r : report.records) {
    records.push_back({{"gate", r.gate},
                       {"case", r.case_id},
                       {"dtype", r.dtype},
                       {"output", r.output},
                       {"check", r.check},
                       {"status", std::string(to_string(r.status))},
                       {"detail", r.detail},
                       {"numbers", r.numbers},
                       {"repro", r.repro}});
  }
  return {{"schema", "rl-kernel/conformance-acceptance"},
          {"schema_version", kSchemaVersion},
          {"key", report.key},
          {"device", report.device},
          {"dtypes", report.dtypes},
          {"quick", report.quick},
          {"command", report.command},
          {"started_at", report.started_at},
          {"elapsed_seconds", report.elapsed_seconds},
          {"gates", report.gates},
          {"environment", report.environment},
          {"counts", counts},
          {"passed", !report.any_failed()},
          {"records", records}};
}

std::string summary_markdown(const RunReport& report) {
  std::string md = "# Conformance of `" + report.key + "` on " + report.device + "\n\n";
  md += report.any_failed() ? "**FAILED**" : "**No record failed**";
  md += " — " + counts_line(report) + " (" + std::to_string(static_cast<int>(report.elapsed_seconds)) + " s" +
        (report.quick ? ", --quick" : "") + ").\n\n";
  md += "Command: `" + report.command + "`\n\n## Environment\n\n| | |\n|---|---|\n";
  for (const auto& [name, value] : report.environment.items()) {
    md += "| " + name + " | " + one_line(value.is_string() ? value.get<std::string>() : value.dump()) + " |\n";
  }
  md += "\n## Gates\n\n| gate | passed | failed | skipped | unimplemented | mistrusted | invalid_arguments | worst record |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const std::string& gate : report.gates) {
    std::map<Status, std::size_t> counts;
    const Record* worst = nullptr;
    for (const Record& r : report.records) {
      if (r.gate != gate) continue;
      ++counts[r.status];
      if (r.status == Status::failed && (worst == nullptr || badness(r) > badness(*worst))) worst = &r;
    }
    md += "| " + gate;
    for (Status status : kAllStatuses) md += " | " + std::to_string(counts[status]);
    md += " | " + (worst == nullptr ? std::string("") : "`" + worst->case_id + "` " + worst->output + ": " + one_line(worst->detail)) +
          " |\n";
  }
  std::vector<const Record*> failures;
  for (const Record& r : report.records) {
    if (r.status != Status::passed && r.status != Status::skipped) failures.push_back(&r);
  }
  if (!failures.empty()) {
    md += "\n## Records that did not pass\n\n";
    for (const Record* r : failures) {
      md += "- **" + std::string(to_string(r->status)) + "** `" + r->case_id + "`" + (r->output.empty() ? "" : " " + r->output) +
            (r->check.empty() ? "" : " (" + r->check + ")") + ": " + one_line(r->detail) + "\n  - repro: `" + r->repro + "`\n";
    }
  }
  md += "\nEvery record, with its numbers, is in `acceptance.json` (schema: docs/conformance.md).\n";
  return md;
}

std::string closing_lines(const RunReport& report) {
  std::string text = "conform " + report.key + " on " + report.device + ": " + counts_line(report) + "\n";
  std::size_t shown = 0;
  for (const Record& r : report.records) {
    if (r.status != Status::failed) continue;
    if (shown++ == kRecapFailures) {
      text += "  ... more failures in SUMMARY.md\n";
      break;
    }
    text += "  FAILED " + r.case_id + (r.output.empty() ? "" : " " + r.output) + ": " + one_line(r.detail) + "\n    " + r.repro + "\n";
  }
  return text;
}

Result<void> write_report(const RunReport& report, const std::filesystem::path& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return fail(ErrorCode::io_error, "creating " + directory.string() + ": " + error.message());
  for (const auto& [name, text] : {std::pair{std::string("acceptance.json"), to_json(report).dump(2) + "\n"},
                                   std::pair{std::string("SUMMARY.md"), summary_markdown(report)}}) {
    std::ofstream file(directory / name, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file) return fail(ErrorCode::io_error, "writing " + (directory / name).string());
  }
  return {};
}

}  // namespace rlk::conform
