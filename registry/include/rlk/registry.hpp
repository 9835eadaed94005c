// The registry: loads every spec on the spec path and answers get_op(key, device).
// No silent fallback: a request for one platform never gets another platform's code.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rlk/device.hpp"
#include "rlk/error.hpp"
#include "rlk/op.hpp"
#include "rlk/spec.hpp"

namespace rlk {

struct RegistryOptions {
  // Directories searched (recursively) for *.yaml specs. Empty: $RLK_SPEC_PATH
  // (colon-separated) if set, else the build tree's specs/ or the installed share dir.
  std::vector<std::filesystem::path> spec_path;
  // Directories searched for plugin libraries. Empty: $RLK_PLUGIN_PATH if set, else the
  // directory that holds the rl-kernel library itself. Never the working directory.
  std::vector<std::filesystem::path> plugin_path;
};

// The state of one (key, platform) slot, as `rlk explain` shows it.
enum class SlotState {
  available,
  not_implemented,
  library_not_found,
  load_error,
  abi_mismatch,
  probe_failed,
  spec_mismatch,
  duplicate,
};
std::string_view to_string(SlotState state);

struct SlotStatus {
  std::string key;
  Platform platform = Platform::cpu;
  SlotState state = SlotState::not_implemented;
  std::string reason;                              // one line, the whole chain of causes
  std::string library;                             // resolved plugin file, if any
  std::vector<std::filesystem::path> examined;     // every file the search looked at
  std::string build_info;                          // the plugin's build description, if loaded
};

class Registry {
 public:
  // Loads and validates every spec; a malformed spec or a duplicate key is an error.
  static Result<std::shared_ptr<Registry>> open(RegistryOptions options = {});
  // A process-wide registry with default options, opened on first use (thread-safe).
  static Result<std::shared_ptr<Registry>> global();

  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  const std::vector<OpSpec>& specs() const;
  const OpSpec* find_spec(std::string_view key) const;
  // The spec of `key`, or an unknown_key error that names the nearest known keys.
  Result<const OpSpec*> spec(std::string_view key) const;
  const RegistryOptions& options() const;

  // Thread-safe; each plugin library is loaded at most once per registry.
  Result<Op> get_op(std::string_view key, const Device& device);
  Result<Op> get_op(std::string_view key, std::string_view device);

  // Device-independent state of every slot of `key` (loads plugins as needed).
  std::vector<SlotStatus> status(std::string_view key);
  // The state of one slot for one device, including the plugin's device probe.
  SlotStatus status(std::string_view key, const Device& device);

  struct Impl;

 private:
  explicit Registry(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Convenience for host applications: Registry::global()->get_op(key, device).
Result<Op> get_op(std::string_view key, std::string_view device);

}  // namespace rlk
