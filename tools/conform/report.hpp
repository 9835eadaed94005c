// What a run leaves behind: DIR/acceptance.json (schema in docs/conformance.md, versioned by
// kSchemaVersion), DIR/SUMMARY.md for people, and the closing lines on stdout.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record.hpp"

namespace rlk::conform {

inline constexpr int kSchemaVersion = 1;

struct RunReport {
  std::string key;
  std::string device;
  std::vector<std::string> dtypes;
  bool quick = false;
  std::string command;
  std::string started_at;  // UTC, ISO 8601
  double elapsed_seconds = 0;
  std::vector<std::string> gates;
  nlohmann::json environment;
  std::vector<Record> records;

  std::map<Status, std::size_t> counts() const;
  bool any_failed() const;
};

nlohmann::json to_json(const RunReport& report);
std::string summary_markdown(const RunReport& report);
// "N passed, M failed, ..." then up to 10 failures with their repro lines.
std::string closing_lines(const RunReport& report);
Result<void> write_report(const RunReport& report, const std::filesystem::path& directory);

}  // namespace rlk::conform
