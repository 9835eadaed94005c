// Host-side launch helpers shared by the kernels' translation units: per-device cached facts
// the launchers consult on every call without synchronizing.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

#include <cuda_runtime.h>

namespace rlk::cuda::qwenimage::launch {

// Devices whose facts are cached; others are queried on every call.
constexpr int kCachedDevices = 64;

// The largest dynamic shared memory one block of the current device may use (opt-in), cached
// per device (a host attribute query).
inline cudaError_t smem_per_block_optin(std::size_t* bytes) {
  static std::array<std::atomic<int>, kCachedDevices> cache{};  // 0: unknown
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const bool cacheable = device >= 0 && device < kCachedDevices;
  int optin = cacheable ? cache[device].load(std::memory_order_relaxed) : 0;
  if (optin == 0) {
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err != cudaSuccess) return err;
    if (cacheable) cache[device].store(optin, std::memory_order_relaxed);
  }
  *bytes = static_cast<std::size_t>(optin);
  return cudaSuccess;
}

// Dynamic shared memory above 48 KB needs the kernel's limit raised: once per device and kernel
// (`raised` belongs to the kernel; a host-side attribute call, nothing is synchronized, allowed
// inside a CUDA-graph capture).
template <class Kernel>
cudaError_t allow_smem(Kernel* kernel, std::size_t bytes, std::array<std::atomic<bool>, kCachedDevices>& raised) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const bool cacheable = device >= 0 && device < kCachedDevices;
  if (cacheable && raised[device].load(std::memory_order_acquire)) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err == cudaSuccess && cacheable) raised[device].store(true, std::memory_order_release);
  return err;
}

}  // namespace rlk::cuda::qwenimage::launch
