// Adapts the kernels (adaln_mod_projection_kernels.hpp) to the plugin ABI. The host has
// already validated the call against the spec; this checks what only the plugin knows
// (the device it was created for, the workspace size) before any byte is written.
#include "adaln_mod_projection_op.hpp"

#include <string>

#include "adaln_mod_projection_kernels.hpp"
#include "cuda_device.hpp"

namespace rlk::cuda::qwenimage {
namespace {

struct AdalnOp {
  int device = 0;
};

Storage storage_of(const DLTensor& tensor) {
  if (tensor.dtype.code == kDLFloat && tensor.dtype.bits == 32) return Storage::float32;
  if (tensor.dtype.code == kDLBfloat && tensor.dtype.bits == 16) return Storage::bfloat16;
  throw sdk::PluginError{RLK_STATUS_INVALID_ARGUMENT, "argument 'temb': dtype must be float32 or bfloat16"};
}

Problem problem_of(const rlk_call& call) {
  const DLTensor& temb = sdk::argument(call, "temb");
  const DLTensor& weight = sdk::argument(call, "weight");
  return Problem{storage_of(temb), temb.shape[0], weight.shape[1], weight.shape[0]};
}

void require_on_device(const AdalnOp& op, const rlk_call& call) {
  for (uint32_t i = 0; i < call.num_args; ++i) {
    const DLTensor& t = *call.args[i].tensor;
    if (t.device.device_type != kDLCUDA || t.device.device_id != op.device) {
      throw sdk::PluginError{RLK_STATUS_INVALID_ARGUMENT, std::string("argument '") + call.args[i].name +
                                                              "' is not on cuda:" + std::to_string(op.device)};
    }
  }
}

std::size_t required_workspace(const rlk_call& call) {
  const Problem problem = problem_of(call);
  return call.direction == RLK_DIRECTION_FORWARD ? forward_workspace_bytes(problem) : backward_workspace_bytes(problem);
}

int32_t run(void* self, const rlk_call* call, char* message, size_t capacity) {
  return sdk::guarded(message, capacity, [&] {
    const AdalnOp& op = *static_cast<const AdalnOp*>(self);
    require_on_device(op, *call);
    const Problem problem = problem_of(*call);
    const std::size_t needed = required_workspace(*call);
    if (call->workspace_bytes < needed || (needed > 0 && call->workspace == nullptr)) {
      throw sdk::PluginError{RLK_STATUS_WORKSPACE_TOO_SMALL,
                             "argument 'workspace': " + std::string(call->direction == RLK_DIRECTION_FORWARD ? "forward" : "backward") +
                                 " at B = " + std::to_string(problem.B) + " needs " + std::to_string(needed) +
                                 " bytes of device workspace, got " + std::to_string(call->workspace_bytes) +
                                 " (ask Op::workspace_bytes and pass RunOptions::workspace)"};
    }
    DeviceScope scope(op.device);
    const auto stream = static_cast<cudaStream_t>(call->stream);
    if (call->direction == RLK_DIRECTION_FORWARD) {
      const ForwardTensors tensors{sdk::data_of(sdk::argument(*call, "temb")), sdk::data_of(sdk::argument(*call, "weight")),
                                   sdk::data_of(sdk::argument(*call, "bias")), sdk::data_of(sdk::argument(*call, "out"))};
      check(launch_forward(problem, tensors, call->workspace, call->workspace_bytes, stream), "forward launch");
    } else {
      const BackwardTensors tensors{sdk::data_of(sdk::argument(*call, "temb")), sdk::data_of(sdk::argument(*call, "weight")),
                                    sdk::data_of(sdk::argument(*call, "grad_out")), sdk::data_of(sdk::argument(*call, "grad_temb")),
                                    sdk::data_of(sdk::argument(*call, "grad_weight")), sdk::data_of(sdk::argument(*call, "grad_bias"))};
      check(launch_backward(problem, tensors, call->workspace, call->workspace_bytes, stream), "backward launch");
    }
  });
}

int32_t workspace_bytes(void*, const rlk_call* call, uint64_t* bytes, char* message, size_t capacity) {
  return sdk::guarded(message, capacity, [&] { *bytes = required_workspace(*call); });
}

void destroy(void* self) { delete static_cast<AdalnOp*>(self); }

const rlk_op_vtable kVtable = {sizeof(rlk_op_vtable), run, workspace_bytes, destroy};

int32_t create(const rlk_op_create_args* args, void** self, const rlk_op_vtable** vtable, char* message, size_t capacity) {
  return sdk::guarded(message, capacity, [&] {
    require_usable_device(args->device_index);
    *self = new AdalnOp{args->device_index};
    *vtable = &kVtable;
  });
}

}  // namespace

rlk_op_entry adaln_mod_projection_entry() {
  return rlk_op_entry{"qwenimage_adaln_mod_projection", RLK_QWENIMAGE_ADALN_SPEC_SHA256, create};
}

}  // namespace rlk::cuda::qwenimage
