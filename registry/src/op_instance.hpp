// What an rlk::Op handle points to: the spec, the device and the implementation behind it.
#pragma once

#include <memory>
#include <string>

#include "rlk/op.hpp"
#include "rlk/plugin_loader.hpp"
#include "rlk/reference.hpp"

namespace rlk::detail {

// One implementation of an operator: the built-in reference or a plugin's C vtable.
class OpBackend {
 public:
  virtual ~OpBackend() = default;
  virtual Result<void> run(Direction direction, const TensorMap& args, const RunOptions& options) const = 0;
  virtual Result<std::uint64_t> workspace_bytes(Direction direction, const TensorMap& args) const = 0;
};

struct OpInstance {
  std::shared_ptr<const OpSpec> spec;
  Device device;
  std::string implementation;
  std::unique_ptr<const OpBackend> backend;
};

std::unique_ptr<const OpBackend> make_reference_backend(const reference::ReferenceEntry& entry);
// Takes ownership of `self`; the backend keeps `plugin.library` loaded until after destroy().
std::unique_ptr<const OpBackend> make_plugin_backend(plugins::LoadedPlugin plugin, void* self,
                                                     const rlk_op_vtable* vtable);

// Maps a plugin status code to the library's error code.
ErrorCode error_code_of(int32_t status);

}  // namespace rlk::detail
