#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "op_instance.hpp"

namespace rlk {
namespace {

std::string shape_text(const DLTensor& tensor) {
  std::string text = "[";
  for (int i = 0; i < tensor.ndim; ++i) text += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  return text + "]";
}

std::string shape_text(const ArgumentSpec& argument) {
  std::string text = "[";
  for (std::size_t i = 0; i < argument.shape.size(); ++i) {
    const Dim& d = argument.shape[i];
    text += (i ? ", " : "") + (d.symbol.empty() ? std::to_string(d.extent) : d.symbol);
  }
  return text + "]";
}

std::string names_of(const std::vector<const ArgumentSpec*>& arguments) {
  std::string text;
  for (const auto* a : arguments) text += (text.empty() ? "" : ", ") + a->name;
  return text;
}

}  // namespace

Result<void> validate_call(const OpSpec& spec, Direction direction, const Device& device, const TensorMap& args) {
  const auto expected = spec.arguments_of(direction);
  const std::string context = spec.key + " " + std::string(to_string(direction));
  for (const auto& [name, tensor] : args) {
    const ArgumentSpec* argument = spec.argument(name);
    if (argument == nullptr || !argument->used_in(direction)) {
      return fail(ErrorCode::invalid_argument, context + ": unknown argument '" + name + "' (expected " + names_of(expected) + ")");
    }
  }
  std::optional<DType> call_dtype;
  std::string dtype_source;
  std::map<std::string, std::int64_t> bound;  // symbol -> extent
  std::string symbol_source;
  for (const ArgumentSpec* argument : expected) {
    const auto found = args.find(argument->name);
    if (found == args.end()) {
      return fail(ErrorCode::invalid_argument, context + ": missing argument '" + argument->name + "' (expected " + names_of(expected) + ")");
    }
    const DLTensor& t = found->second;
    const std::string who = context + ": argument '" + argument->name + "'";
    const auto dtype = from_dlpack(t.dtype);
    if (!dtype || spec.numeric(*dtype) == nullptr) {
      std::string allowed;
      for (DType d : spec.dtypes()) allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(d));
      return fail(ErrorCode::invalid_argument, who + " has an unsupported dtype (code " + std::to_string(t.dtype.code) +
                                                   ", " + std::to_string(t.dtype.bits) + " bits, " +
                                                   std::to_string(t.dtype.lanes) + " lanes); allowed: " + allowed);
    }
    if (!call_dtype) {
      call_dtype = dtype;
      dtype_source = argument->name;
    } else if (*call_dtype != *dtype) {
      return fail(ErrorCode::invalid_argument, who + " has dtype " + std::string(to_string(*dtype)) + " but '" + dtype_source +
                                                   "' has " + std::string(to_string(*call_dtype)) +
                                                   ": all arguments of one call share the execution dtype");
    }
    if (t.ndim != static_cast<int>(argument->shape.size())) {
      return fail(ErrorCode::invalid_argument, who + " has shape " + shape_text(t) + " but the spec requires " + shape_text(*argument));
    }
    for (int i = 0; i < t.ndim; ++i) {
      const Dim& dim = argument->shape[i];
      if (dim.symbol.empty()) {
        if (t.shape[i] != dim.extent) {
          return fail(ErrorCode::invalid_argument, who + " has shape " + shape_text(t) + " but the spec requires " + shape_text(*argument));
        }
        continue;
      }
      const auto [it, inserted] = bound.emplace(dim.symbol, t.shape[i]);
      if (inserted) {
        symbol_source = argument->name;
        for (const auto& symbol : spec.symbols) {
          if (symbol.name != dim.symbol) continue;
          if (t.shape[i] < symbol.min || (symbol.max && t.shape[i] > *symbol.max)) {
            return fail(ErrorCode::invalid_argument, who + " binds " + dim.symbol + " = " + std::to_string(t.shape[i]) +
                                                         " outside [" + std::to_string(symbol.min) + ", " +
                                                         (symbol.max ? std::to_string(*symbol.max) : "inf") + "]");
          }
        }
      } else if (it->second != t.shape[i]) {
        return fail(ErrorCode::invalid_argument, who + " has " + dim.symbol + " = " + std::to_string(t.shape[i]) +
                                                     " but an earlier argument bound " + dim.symbol + " = " + std::to_string(it->second));
      }
    }
    if (device_of(t) != device || t.device.device_type == kDLCUDAHost) {
      return fail(ErrorCode::invalid_argument, who + " is on " + to_string(device_of(t)) + " (DLPack device type " +
                                                   std::to_string(t.device.device_type) + ") but the operator runs on " + to_string(device));
    }
    if (t.data == nullptr) return fail(ErrorCode::invalid_argument, who + " has a null data pointer");
    if (!is_row_major_contiguous(t)) {
      return fail(ErrorCode::invalid_argument, who + " is not compact row-major (strides given); only contiguous tensors are supported");
    }
    if (reinterpret_cast<std::uintptr_t>(first_byte(t)) % 16 != 0) {
      char address[32];
      std::snprintf(address, sizeof address, "%p", static_cast<const void*>(first_byte(t)));
      return fail(ErrorCode::invalid_argument, who + " is not 16-byte aligned (first element at " + std::string(address) + ")");
    }
  }
  for (const ArgumentSpec* written : expected) {
    if (!written->writes()) continue;
    const DLTensor& w = args.find(written->name)->second;
    const std::byte* w_begin = first_byte(w);
    const std::byte* w_end = w_begin + byte_extent(w);
    for (const ArgumentSpec* other : expected) {
      if (other == written) continue;
      const DLTensor& o = args.find(other->name)->second;
      const std::byte* o_begin = first_byte(o);
      const std::byte* o_end = o_begin + byte_extent(o);
      if (w_begin < o_end && o_begin < w_end) {
        return fail(ErrorCode::invalid_argument, context + ": output '" + written->name + "' overlaps argument '" + other->name +
                                                     "' in memory; outputs must not alias any other argument");
      }
    }
  }
  return {};
}

const OpSpec& Op::spec() const { return *instance_->spec; }
Device Op::device() const { return instance_->device; }
const std::string& Op::implementation() const { return instance_->implementation; }

Result<void> Op::run(Direction direction, const TensorMap& args, const RunOptions& options) const {
  if (auto valid = validate_call(spec(), direction, device(), args); !valid) return valid;
  return instance_->backend->run(direction, args, options);
}

Result<std::uint64_t> Op::workspace_bytes(Direction direction, const TensorMap& args) const {
  if (auto valid = validate_call(spec(), direction, device(), args); !valid) return std::unexpected(valid.error());
  return instance_->backend->workspace_bytes(direction, args);
}

namespace detail {

ErrorCode error_code_of(int32_t status) {
  switch (status) {
    case RLK_STATUS_INVALID_ARGUMENT: return ErrorCode::invalid_argument;
    case RLK_STATUS_UNSUPPORTED: return ErrorCode::not_implemented;
    case RLK_STATUS_NO_DEVICE: return ErrorCode::no_device;
    case RLK_STATUS_PROBE_FAILED: return ErrorCode::probe_failed;
    case RLK_STATUS_RUNTIME_ERROR: return ErrorCode::runtime_error;
    case RLK_STATUS_WORKSPACE_TOO_SMALL: return ErrorCode::workspace_too_small;
    default: return ErrorCode::internal;
  }
}

namespace {

class ReferenceBackend final : public OpBackend {
 public:
  explicit ReferenceBackend(const reference::ReferenceEntry& entry) : entry_(entry) {}
  Result<void> run(Direction direction, const TensorMap& args, const RunOptions&) const override {
    return entry_.run(direction, args, 0);
  }
  Result<std::uint64_t> workspace_bytes(Direction, const TensorMap&) const override { return 0; }

 private:
  const reference::ReferenceEntry& entry_;
};

class PluginBackend final : public OpBackend {
 public:
  PluginBackend(plugins::LoadedPlugin plugin, void* self, const rlk_op_vtable* vtable)
      : plugin_(std::move(plugin)), self_(self), vtable_(vtable) {}
  ~PluginBackend() override { vtable_->destroy(self_); }  // before plugin_ releases the library

  Result<void> run(Direction direction, const TensorMap& args, const RunOptions& options) const override {
    std::vector<rlk_tensor_arg> c_args;
    rlk_call call = make_call(direction, args, c_args);
    call.stream = options.stream;
    call.workspace = options.workspace;
    call.workspace_bytes = options.workspace_bytes;
    char message[1024] = {};
    const int32_t status = vtable_->run(self_, &call, message, sizeof message);
    if (status != RLK_STATUS_OK) return fail(error_code_of(status), plugin_.path.string() + ": " + message);
    return {};
  }

  Result<std::uint64_t> workspace_bytes(Direction direction, const TensorMap& args) const override {
    std::vector<rlk_tensor_arg> c_args;
    const rlk_call call = make_call(direction, args, c_args);
    std::uint64_t bytes = 0;
    char message[1024] = {};
    const int32_t status = vtable_->workspace_bytes(self_, &call, &bytes, message, sizeof message);
    if (status != RLK_STATUS_OK) return fail(error_code_of(status), plugin_.path.string() + ": " + message);
    return bytes;
  }

 private:
  static rlk_call make_call(Direction direction, const TensorMap& args, std::vector<rlk_tensor_arg>& c_args) {
    for (const auto& [name, tensor] : args) c_args.push_back(rlk_tensor_arg{name.c_str(), &tensor});
    rlk_call call{};
    call.struct_size = sizeof(rlk_call);
    call.direction = direction == Direction::forward ? RLK_DIRECTION_FORWARD : RLK_DIRECTION_BACKWARD;
    call.args = c_args.data();
    call.num_args = static_cast<uint32_t>(c_args.size());
    return call;
  }

  plugins::LoadedPlugin plugin_;
  void* self_;
  const rlk_op_vtable* vtable_;
};

}  // namespace

std::unique_ptr<const OpBackend> make_reference_backend(const reference::ReferenceEntry& entry) {
  return std::make_unique<ReferenceBackend>(entry);
}

std::unique_ptr<const OpBackend> make_plugin_backend(plugins::LoadedPlugin plugin, void* self, const rlk_op_vtable* vtable) {
  return std::make_unique<PluginBackend>(std::move(plugin), self, vtable);
}

}  // namespace detail
}  // namespace rlk
