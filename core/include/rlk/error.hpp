// Errors are values: an rlk::Error carries its code and the whole chain of causes,
// outermost context first, so a refusal reads "which spec, which slot, which file, why".
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace rlk {

enum class ErrorCode {
  invalid_argument,   // a caller-supplied value is unacceptable; the message names it
  unknown_key,        // no spec has this key
  spec_invalid,       // a spec file is malformed (file:line:column in the message)
  library_not_found,  // no plugin file on the plugin path
  load_error,         // the plugin file exists but could not be loaded or lacks its entry
  abi_mismatch,       // the plugin's ABI major version differs from the host's
  spec_mismatch,      // the plugin was built against another version of the spec
  duplicate,          // a (key, platform) pair is claimed twice
  not_implemented,    // the slot is fail-closed or the plugin does not serve the key
  no_device,          // the device does not exist or cannot be used
  probe_failed,       // a plugin self-check failed for the device (e.g. fast-math build)
  workspace_too_small,
  runtime_error,      // the platform runtime or the operator reported a failure
  io_error,
  internal,
};

std::string_view to_string(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message);

  // Returns a new error whose outermost frame is `context`; this error becomes its cause.
  // The code stays that of the innermost (root) cause, which is what callers branch on.
  [[nodiscard]] Error with_context(std::string context) const;

  ErrorCode code() const { return code_; }
  // Outermost frame's text.
  const std::string& message() const { return frames_.front(); }
  // Every frame, outermost first; the last one is the root cause.
  const std::vector<std::string>& chain() const { return frames_; }
  // "outer: middle: root" on one line.
  std::string to_string() const;

 private:
  ErrorCode code_;
  std::vector<std::string> frames_;
};

template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}

}  // namespace rlk
