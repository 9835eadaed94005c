// Host-side launch helpers shared by the kernels' translation units: per-device cached facts
// the launchers consult on every call without synchronizing, and the one way every kernel of
// the operator is launched.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

namespace rlk::cuda::qwenimage::launch {

// Devices whose facts are cached; others are queried on every call.
constexpr int kCachedDevices = 64;

// One positive int per device, computed by `query(device, &value)` the first time a device asks
// (host calls only: no synchronization, allowed inside a CUDA-graph capture) and cached after.
class PerDevice {
 public:
  template <class Query>
  cudaError_t get(int* value, Query&& query) {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    const bool cacheable = device >= 0 && device < kCachedDevices;
    int v = cacheable ? values_[device].load(std::memory_order_acquire) : 0;
    if (v <= 0) {
      err = std::forward<Query>(query)(device, &v);
      if (err != cudaSuccess) return err;
      if (cacheable) values_[device].store(v, std::memory_order_release);
    }
    *value = v;
    return cudaSuccess;
  }

 private:
  std::array<std::atomic<int>, kCachedDevices> values_{};
};

// A device attribute of the current device, cached per device.
template <cudaDeviceAttr A>
cudaError_t attribute(int* value) {
  static PerDevice cache;
  return cache.get(value, [](int device, int* v) { return cudaDeviceGetAttribute(v, A, device); });
}

// The largest dynamic shared memory one block of the current device may use (opt-in).
inline cudaError_t smem_per_block_optin(std::size_t* bytes) {
  int optin = 0;
  const cudaError_t err = attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(&optin);
  *bytes = static_cast<std::size_t>(optin);
  return err;
}

// Whether one block of the current device may use `bytes` of dynamic shared memory (opt-in).
inline cudaError_t fits(std::size_t bytes, bool* fits) {
  std::size_t optin = 0;
  const cudaError_t err = smem_per_block_optin(&optin);
  *fits = err == cudaSuccess && optin >= bytes;
  return err;
}

// Compute capability of the current device as 10 * major + minor (90 for an H100 / H200).
inline cudaError_t compute_capability(int* cc) {
  static PerDevice cache;
  return cache.get(cc, [](int device, int* v) {
    int major = 0, minor = 0;
    cudaError_t err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    *v = 10 * major + minor;
    return err;
  });
}

// Dynamic shared memory above 48 KB needs the kernel's limit raised: once per device and kernel
// (the cache belongs to the instantiation, so to the kernel `Fn`).
template <auto Fn>
cudaError_t allow_smem(std::size_t bytes) {
  static PerDevice raised;
  int done = 0;
  return raised.get(&done, [&](int, int* v) {
    *v = 1;
    return cudaFuncSetAttribute(Fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  });
}

// Launches the kernel `Fn` on `stream` so that it may start while the kernel before it in the
// stream is finishing (programmatic dependent launch: its blocks are placed early and wait in
// device::await_prior_grids() instead of after a full drain and relaunch). Every kernel launched
// here calls device::await_prior_grids() before it touches global memory, which keeps the launch
// exactly as ordered as a plain one; what it saves is the gap between kernels. Used only where
// the code the device runs for `Fn` was generated for virtual architecture 9.0 or later (the
// architecture from which await_prior_grids() emits the wait; checked once per device), a plain
// launch elsewhere.
template <auto Fn, class... Args>
cudaError_t kernel(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, Args&&... args) {
  static PerDevice generated_for;  // 1 + the virtual architecture of the code the device runs
  int arch = 0;
  const cudaError_t err = generated_for.get(&arch, [](int, int* v) {
    cudaFuncAttributes a{};
    const cudaError_t e = cudaFuncGetAttributes(&a, Fn);
    *v = 1 + a.ptxVersion;
    return e;
  });
  if (err != cudaSuccess) return err;
  cudaLaunchAttribute overlap[1];
  overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = overlap;
  config.numAttrs = arch - 1 >= 90 ? 1 : 0;
  return cudaLaunchKernelEx(&config, Fn, std::forward<Args>(args)...);
}

// Launches `Fn` on `stream` after everything before it there has completed: for kernels that do
// not call device::await_prior_grids() (a library's, such as CUTLASS 2.x's), which launch::kernel
// must not start early. The kernel after it may still be launched by launch::kernel.
template <auto Fn, class... Args>
cudaError_t plain(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  return cudaLaunchKernelEx(&config, Fn, std::forward<Args>(args)...);
}

}  // namespace rlk::cuda::qwenimage::launch
