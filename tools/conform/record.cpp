#include "record.hpp"

namespace rlk::conform {

std::string_view to_string(Status status) {
  switch (status) {
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::skipped: return "skipped";
    case Status::unimplemented: return "unimplemented";
    case Status::mistrusted: return "mistrusted";
    case Status::invalid_arguments: return "invalid_arguments";
  }
  return "?";
}

Status status_of(const Error& error) {
  switch (error.code()) {
    case ErrorCode::invalid_argument:
    case ErrorCode::workspace_too_small: return Status::invalid_arguments;
    case ErrorCode::not_implemented: return Status::unimplemented;
    default: return Status::failed;
  }
}

Record record_of_error(std::string gate, std::string case_id, std::string dtype, const Error& error) {
  Record record;
  record.gate = std::move(gate);
  record.case_id = std::move(case_id);
  record.dtype = std::move(dtype);
  record.status = status_of(error);
  record.detail = error.to_string();
  return record;
}

}  // namespace rlk::conform
