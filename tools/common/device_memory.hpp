// Device memory for the rl-kernel tools (rlk, conformance, bench): an owning buffer on an
// rlk::Device and a stream to run operators on. cpu is aligned host memory; cuda:N is
// cudaMalloc on device N, compiled only in builds with RLK_WITH_CUDA. Copies and fills
// are synchronous: the tools do them outside anything they measure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "rlk/device.hpp"
#include "rlk/error.hpp"
#include "rlk/tensor.hpp"

namespace rlk::tools {

class DeviceBuffer {
 public:
  // 256-byte aligned on every platform, so any view passes the registry's alignment check.
  static Result<DeviceBuffer> allocate(const Device& device, std::size_t bytes);

  const Device& device() const { return device_; }
  void* data() const { return memory_.get(); }
  std::size_t size() const { return size_; }

  // `host` must hold exactly size() bytes.
  Result<void> copy_from_host(std::span<const std::byte> host);
  Result<void> copy_to_host(std::span<std::byte> host) const;
  Result<void> fill(std::byte value);

  // A compact row-major tensor over the buffer. DLPack keeps a pointer to `shape`, which
  // must outlive the view. Refused when the tensor would not fit in the buffer.
  Result<DLTensor> view(DType dtype, std::span<const std::int64_t> shape) const;

 private:
  using Release = void (*)(void*);
  DeviceBuffer(const Device& device, std::size_t size, void* memory, Release release)
      : device_(device), size_(size), memory_(memory, release) {}

  Device device_;
  std::size_t size_ = 0;
  std::unique_ptr<void, Release> memory_;
};

// A stream to pass as RunOptions::stream: a non-blocking CUDA stream on cuda:N, none (nullptr)
// on cpu, where operators run synchronously.
class Stream {
 public:
  static Result<Stream> create(const Device& device);

  const Device& device() const { return device_; }
  void* handle() const { return handle_.get(); }
  // Waits for everything queued on the stream and reports an asynchronous failure, if any.
  Result<void> synchronize() const;

 private:
  using Release = void (*)(void*);
  Stream(const Device& device, void* handle, Release release) : device_(device), handle_(handle, release) {}

  Device device_;
  std::unique_ptr<void, Release> handle_;
};

}  // namespace rlk::tools
