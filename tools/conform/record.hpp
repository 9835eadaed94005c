// One conformance record: a gate's verdict on one case and one output, with its numbers and
// the command line that reruns exactly that case. Statuses are a fixed taxonomy
// (docs/conformance.md); nothing else may appear in acceptance.json.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rlk/error.hpp"

namespace rlk::conform {

enum class Status { passed, failed, skipped, unimplemented, mistrusted, invalid_arguments };

inline constexpr std::array kAllStatuses = {Status::passed,        Status::failed,     Status::skipped,
                                            Status::unimplemented, Status::mistrusted, Status::invalid_arguments};

std::string_view to_string(Status status);

struct Record {
  std::string gate;
  std::string case_id;  // unique within a run; `--case` selects it
  std::string dtype;
  std::string output;  // the output argument judged, or empty when the record covers the case
  std::string check;   // what was compared: "fp64_oracle", "cpu_reference", "bytes", "probe", ...
  Status status = Status::passed;
  std::string detail;          // one line: what was checked and, on failure, where it broke
  nlohmann::json numbers = nlohmann::json::object();
  std::string repro;           // filled by the runner
};

// The status an error of the operator or the harness maps to: refusals of the arguments are
// invalid_arguments, fail-closed slots unimplemented, everything else a failure.
Status status_of(const Error& error);

Record record_of_error(std::string gate, std::string case_id, std::string dtype, const Error& error);

}  // namespace rlk::conform
