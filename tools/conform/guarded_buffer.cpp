#include "guarded_buffer.hpp"

#include <array>
#include <cstring>
#include <string>

#ifdef RLK_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace rlk::conform {
namespace {

const std::array<std::byte, GuardedOutput::kGuardBytes>& canary() {
  static const auto pattern = [] {
    std::array<std::byte, GuardedOutput::kGuardBytes> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 37 + 11) & 0xFF);
    return bytes;
  }();
  return pattern;
}

Result<void> check_region(const tools::DeviceBuffer& buffer, std::size_t offset, std::size_t bytes) {
  if (offset + bytes <= buffer.size()) return {};
  return fail(ErrorCode::internal, "region [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                                       ") outside a buffer of " + std::to_string(buffer.size()) + " bytes");
}

#ifdef RLK_WITH_CUDA
Result<void> cuda_done(const tools::DeviceBuffer& buffer, cudaError_t status, const char* what) {
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status == cudaSuccess) return {};
  return fail(ErrorCode::runtime_error, to_string(buffer.device()) + ": " + what + ": " + cudaGetErrorString(status));
}
#endif

}  // namespace

Result<void> copy_into(const tools::DeviceBuffer& buffer, std::size_t offset, std::span<const std::byte> host) {
  if (auto r = check_region(buffer, offset, host.size()); !r) return r;
  auto* target = static_cast<std::byte*>(buffer.data()) + offset;
#ifdef RLK_WITH_CUDA
  if (buffer.device().platform == Platform::cuda) {
    cudaSetDevice(buffer.device().index);
    return cuda_done(buffer, cudaMemcpy(target, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
#endif
  std::memcpy(target, host.data(), host.size());
  return {};
}

Result<void> copy_out_of(const tools::DeviceBuffer& buffer, std::size_t offset, std::span<std::byte> host) {
  if (auto r = check_region(buffer, offset, host.size()); !r) return r;
  const auto* source = static_cast<const std::byte*>(buffer.data()) + offset;
#ifdef RLK_WITH_CUDA
  if (buffer.device().platform == Platform::cuda) {
    cudaSetDevice(buffer.device().index);
    return cuda_done(buffer, cudaMemcpy(host.data(), source, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
#endif
  std::memcpy(host.data(), source, host.size());
  return {};
}

Result<void> fill_region(const tools::DeviceBuffer& buffer, std::size_t offset, std::size_t bytes, std::byte value) {
  if (auto r = check_region(buffer, offset, bytes); !r) return r;
  auto* target = static_cast<std::byte*>(buffer.data()) + offset;
#ifdef RLK_WITH_CUDA
  if (buffer.device().platform == Platform::cuda) {
    cudaSetDevice(buffer.device().index);
    return cuda_done(buffer, cudaMemset(target, static_cast<int>(value), bytes), "cudaMemset");
  }
#endif
  std::memset(target, static_cast<int>(value), bytes);
  return {};
}

Result<const tools::DeviceBuffer*> ReusableBuffer::reserve(const Device& device, std::size_t bytes) {
  if (!buffer_ || buffer_->size() < bytes || !(buffer_->device() == device)) {
    buffer_.reset();
    auto allocated = tools::DeviceBuffer::allocate(device, std::max<std::size_t>(bytes, 256));
    if (!allocated) return std::unexpected(allocated.error());
    buffer_.emplace(std::move(*allocated));
  }
  return &*buffer_;
}

Result<void> GuardedOutput::arm(const Device& device, std::size_t payload) {
  auto buffer = memory_.reserve(device, payload + 2 * kGuardBytes);
  if (!buffer) return std::unexpected(buffer.error());
  buffer_ = *buffer;
  payload_ = payload;
  if (auto r = copy_into(*buffer_, 0, canary()); !r) return r;
  if (auto r = fill_region(*buffer_, kGuardBytes, payload_, kPoisonByte); !r) return r;
  return copy_into(*buffer_, kGuardBytes + payload_, canary());
}

void* GuardedOutput::data() const { return static_cast<std::byte*>(buffer_->data()) + kGuardBytes; }

Result<void> GuardedOutput::check_canaries() const {
  std::array<std::byte, kGuardBytes> seen{};
  for (const bool after : {false, true}) {
    const std::size_t offset = after ? kGuardBytes + payload_ : 0;
    if (auto r = copy_out_of(*buffer_, offset, seen); !r) return r;
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (seen[i] != canary()[i]) {
        const std::string where = after ? "byte " + std::to_string(i) + " after the output's end"
                                        : "byte " + std::to_string(kGuardBytes - i) + " before the output's start";
        return fail(ErrorCode::runtime_error, "canary overwritten: " + where);
      }
    }
  }
  return {};
}

Result<HostTensor> GuardedOutput::read(DType dtype, std::vector<std::int64_t> shape) const {
  HostTensor tensor = HostTensor::zeros(dtype, std::move(shape));
  if (tensor.bytes.size() != payload_) {
    return fail(ErrorCode::internal, "read of " + std::to_string(tensor.bytes.size()) + " bytes from an output of " +
                                         std::to_string(payload_));
  }
  if (auto r = copy_out_of(*buffer_, kGuardBytes, tensor.bytes); !r) return std::unexpected(r.error());
  return tensor;
}

}  // namespace rlk::conform
