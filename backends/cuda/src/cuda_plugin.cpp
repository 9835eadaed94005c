// The CUDA backend plugin: its ABI entry point, the device probe and the operator table.
#include <array>
#include <mutex>
#include <optional>
#include <string>

#include "adaln_mod_projection_kernels.hpp"
#include "adaln_mod_projection_op.hpp"
#include "cuda_device.hpp"

namespace rlk::cuda {

void check(cudaError_t status, const std::string& what, rlk_status_code code) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // the error is reported here; do not leave it for the caller's next call
    throw sdk::PluginError{code, what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"};
  }
}

DeviceScope::DeviceScope(int device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")", RLK_STATUS_NO_DEVICE);
    switched_ = true;
  }
}

DeviceScope::~DeviceScope() {
  if (switched_) cudaSetDevice(previous_);
}

namespace {

// Compute capabilities this build carries machine code for (RLK_CUDA_ARCHITECTURES).
bool has_code_for(int major, int minor) {
  return (major == 9 && minor == 0) || (major == 8) || (major == 10 && minor == 0);
}

struct ProbeOutcome {
  rlk_status_code code = RLK_STATUS_OK;
  std::string message;
};

ProbeOutcome probe_device(int device) {
  int count = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    cudaGetLastError();
    return {RLK_STATUS_NO_DEVICE, std::string("no usable CUDA device: cudaGetDeviceCount failed: ") +
                                      cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"};
  }
  if (device < 0 || device >= count) {
    return {RLK_STATUS_NO_DEVICE, "cuda:" + std::to_string(device) + " does not exist (" + std::to_string(count) +
                                      " CUDA device(s) visible)"};
  }
  cudaDeviceProp properties{};
  if (const cudaError_t status = cudaGetDeviceProperties(&properties, device); status != cudaSuccess) {
    cudaGetLastError();
    return {RLK_STATUS_NO_DEVICE, std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(status)};
  }
  if (!has_code_for(properties.major, properties.minor)) {
    return {RLK_STATUS_UNSUPPORTED, std::string(properties.name) + " has compute capability " +
                                        std::to_string(properties.major) + "." + std::to_string(properties.minor) +
                                        ", which this build has no code for (built for sm_80, sm_90a, sm_100)"};
  }
  try {
    DeviceScope scope(device);
    bool strict = false;
    char detail[512] = {};
    check(qwenimage::run_strict_math_probe(&strict, detail, sizeof detail), "strict-math probe launch");
    if (!strict) {
      return {RLK_STATUS_PROBE_FAILED, std::string("strict-math check failed on cuda:") + std::to_string(device) +
                                           ": " + detail + "; this plugin was built with fast-math "
                                           "(--use_fast_math or equivalent): rebuild it without fast-math"};
    }
  } catch (const sdk::PluginError& e) {
    return {e.code, e.message};
  }
  return {};
}

}  // namespace

void require_usable_device(int device) {
  static std::mutex mutex;
  static std::array<std::optional<ProbeOutcome>, 64> outcomes;
  if (device < 0 || device >= static_cast<int>(outcomes.size())) {
    throw sdk::PluginError{RLK_STATUS_NO_DEVICE, "cuda:" + std::to_string(device) + " is out of range"};
  }
  std::lock_guard lock(mutex);
  if (!outcomes[device]) outcomes[device] = probe_device(device);
  if (outcomes[device]->code != RLK_STATUS_OK) throw sdk::PluginError{outcomes[device]->code, outcomes[device]->message};
}

namespace {

int32_t probe(int32_t device, char* message, size_t capacity) {
  return sdk::guarded(message, capacity, [&] { require_usable_device(device); });
}

const rlk_op_entry kOps[] = {
    qwenimage::adaln_mod_projection_entry(),
};

const rlk_plugin kPlugin = {
    RLK_PLUGIN_ABI_MAJOR, RLK_PLUGIN_ABI_MINOR, sizeof(rlk_plugin), "cuda", RLK_CUDA_BUILD_INFO,
    sizeof(kOps) / sizeof(kOps[0]), kOps, probe,
};

}  // namespace
}  // namespace rlk::cuda

RLK_EXPORT_PLUGIN(rlk::cuda::kPlugin)
