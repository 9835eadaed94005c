#include "rlk/error.hpp"

namespace rlk {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::unknown_key: return "unknown key";
    case ErrorCode::spec_invalid: return "invalid spec";
    case ErrorCode::library_not_found: return "library not found";
    case ErrorCode::load_error: return "load error";
    case ErrorCode::abi_mismatch: return "ABI mismatch";
    case ErrorCode::spec_mismatch: return "spec mismatch";
    case ErrorCode::duplicate: return "duplicate";
    case ErrorCode::not_implemented: return "not implemented";
    case ErrorCode::no_device: return "no device";
    case ErrorCode::probe_failed: return "probe failed";
    case ErrorCode::workspace_too_small: return "workspace too small";
    case ErrorCode::runtime_error: return "runtime error";
    case ErrorCode::io_error: return "I/O error";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

Error::Error(ErrorCode code, std::string message) : code_(code), frames_{std::move(message)} {}

Error Error::with_context(std::string context) const {
  Error outer = *this;
  outer.frames_.insert(outer.frames_.begin(), std::move(context));
  return outer;
}

std::string Error::to_string() const {
  std::string text;
  for (const auto& frame : frames_) {
    if (!text.empty()) text += ": ";
    text += frame;
  }
  return text;
}

}  // namespace rlk
