#include "common/device_memory.hpp"

#include <cstring>
#include <new>
#include <string>
#include <utility>

#ifdef RLK_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace rlk::tools {
namespace {

constexpr std::align_val_t kAlignment{256};

void release_host(void* memory) { ::operator delete(memory, kAlignment); }

Result<void> check_size(const char* what, std::size_t given, std::size_t expected) {
  if (given == expected) return {};
  return fail(ErrorCode::invalid_argument, std::string(what) + ": host span has " + std::to_string(given) +
                                               " bytes but the buffer has " + std::to_string(expected));
}

#ifdef RLK_WITH_CUDA
namespace cuda {

Result<void> check(cudaError_t status, const Device& device, const std::string& what) {
  if (status == cudaSuccess) return {};
  const ErrorCode code = status == cudaErrorInvalidDevice || status == cudaErrorNoDevice ? ErrorCode::no_device
                                                                                          : ErrorCode::runtime_error;
  return fail(code, to_string(device) + ": " + what + " failed: " + cudaGetErrorString(status) + " (" +
                        cudaGetErrorName(status) + ")");
}

// Makes device.index current for one call and restores the caller's device afterwards.
class CurrentDevice {
 public:
  static Result<CurrentDevice> select(const Device& device) {
    int previous = 0;
    if (auto r = check(cudaGetDevice(&previous), device, "cudaGetDevice"); !r) return std::unexpected(r.error());
    if (auto r = check(cudaSetDevice(device.index), device, "cudaSetDevice"); !r) return std::unexpected(r.error());
    return CurrentDevice(previous);
  }
  CurrentDevice(CurrentDevice&& other) noexcept : previous_(std::exchange(other.previous_, -1)) {}
  CurrentDevice& operator=(CurrentDevice&&) = delete;
  ~CurrentDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  explicit CurrentDevice(int previous) : previous_(previous) {}
  int previous_;
};

// Pageable-memory copies and cudaMemset may still be in flight on the legacy stream when they
// return, and the tools' non-blocking streams do not wait for it: finish them here.
Result<void> finish(const Device& device, cudaError_t status, const std::string& what) {
  if (auto r = check(status, device, what); !r) return r;
  return check(cudaDeviceSynchronize(), device, what + " (synchronize)");
}

void release_memory(void* memory) { cudaFree(memory); }
void release_stream(void* stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

}  // namespace cuda
#endif

Result<void> check_platform(const Device& device) {
  if (device.platform == Platform::cpu) return {};
  if (device.platform == Platform::cuda) {
#ifdef RLK_WITH_CUDA
    return {};
#else
    return fail(ErrorCode::no_device, to_string(device) + ": this build has no CUDA (configured with RLK_BUILD_CUDA=OFF)");
#endif
  }
  return fail(ErrorCode::not_implemented, to_string(device) + ": the rlk tools hold memory on cpu and cuda devices only");
}

}  // namespace

Result<DeviceBuffer> DeviceBuffer::allocate(const Device& device, std::size_t bytes) {
  if (auto supported = check_platform(device); !supported) return std::unexpected(supported.error());
#ifdef RLK_WITH_CUDA
  if (device.platform == Platform::cuda) {
    auto current = cuda::CurrentDevice::select(device);
    if (!current) return std::unexpected(current.error());
    void* memory = nullptr;
    if (auto r = cuda::check(cudaMalloc(&memory, bytes), device, "cudaMalloc of " + std::to_string(bytes) + " bytes"); !r) {
      return std::unexpected(r.error());
    }
    return DeviceBuffer(device, bytes, memory, cuda::release_memory);
  }
#endif
  void* memory = ::operator new(bytes, kAlignment, std::nothrow);
  if (memory == nullptr) {
    return fail(ErrorCode::runtime_error, to_string(device) + ": allocating " + std::to_string(bytes) + " bytes of host memory failed");
  }
  return DeviceBuffer(device, bytes, memory, release_host);
}

Result<void> DeviceBuffer::copy_from_host(std::span<const std::byte> host) {
  if (auto r = check_size("copy_from_host", host.size(), size_); !r) return r;
#ifdef RLK_WITH_CUDA
  if (device_.platform == Platform::cuda) {
    auto current = cuda::CurrentDevice::select(device_);
    if (!current) return std::unexpected(current.error());
    return cuda::finish(device_, cudaMemcpy(data(), host.data(), size_, cudaMemcpyHostToDevice), "cudaMemcpy host to device");
  }
#endif
  std::memcpy(data(), host.data(), size_);
  return {};
}

Result<void> DeviceBuffer::copy_to_host(std::span<std::byte> host) const {
  if (auto r = check_size("copy_to_host", host.size(), size_); !r) return r;
#ifdef RLK_WITH_CUDA
  if (device_.platform == Platform::cuda) {
    auto current = cuda::CurrentDevice::select(device_);
    if (!current) return std::unexpected(current.error());
    return cuda::finish(device_, cudaMemcpy(host.data(), data(), size_, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
  }
#endif
  std::memcpy(host.data(), data(), size_);
  return {};
}

Result<void> DeviceBuffer::fill(std::byte value) {
#ifdef RLK_WITH_CUDA
  if (device_.platform == Platform::cuda) {
    auto current = cuda::CurrentDevice::select(device_);
    if (!current) return std::unexpected(current.error());
    return cuda::finish(device_, cudaMemset(data(), static_cast<int>(value), size_), "cudaMemset");
  }
#endif
  std::memset(data(), static_cast<int>(value), size_);
  return {};
}

Result<DLTensor> DeviceBuffer::view(DType dtype, std::span<const std::int64_t> shape) const {
  std::size_t bytes = element_size(dtype);
  for (std::int64_t extent : shape) {
    if (extent < 0) return fail(ErrorCode::invalid_argument, "view: negative extent " + std::to_string(extent));
    bytes *= static_cast<std::size_t>(extent);
  }
  if (bytes > size_) {
    return fail(ErrorCode::invalid_argument, "view: a " + std::string(to_string(dtype)) + " tensor of " + std::to_string(bytes) +
                                                 " bytes does not fit in a buffer of " + std::to_string(size_));
  }
  DLTensor tensor{};
  tensor.data = data();
  tensor.device = device_.platform == Platform::cuda ? DLDevice{kDLCUDA, device_.index} : DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<std::int32_t>(shape.size());
  tensor.dtype = to_dlpack(dtype);
  // DLPack's shape is mutable in its C declaration only; nothing writes through it.
  tensor.shape = const_cast<std::int64_t*>(shape.data());
  return tensor;
}

Result<Stream> Stream::create(const Device& device) {
  if (auto supported = check_platform(device); !supported) return std::unexpected(supported.error());
#ifdef RLK_WITH_CUDA
  if (device.platform == Platform::cuda) {
    auto current = cuda::CurrentDevice::select(device);
    if (!current) return std::unexpected(current.error());
    cudaStream_t stream = nullptr;
    if (auto r = cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), device, "cudaStreamCreate"); !r) {
      return std::unexpected(r.error());
    }
    return Stream(device, stream, cuda::release_stream);
  }
#endif
  // cpu operators run synchronously on the caller's thread: there is no handle to release.
  return Stream(device, nullptr, nullptr);
}

Result<void> Stream::synchronize() const {
#ifdef RLK_WITH_CUDA
  if (device_.platform == Platform::cuda) {
    return cuda::check(cudaStreamSynchronize(static_cast<cudaStream_t>(handle())), device_, "cudaStreamSynchronize");
  }
#endif
  return {};
}

}  // namespace rlk::tools
