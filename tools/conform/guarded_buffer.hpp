// Output memory for conformance calls. Each output sits between two canary regions, and its
// bytes are poisoned (all 0xFF: a NaN in float32, bfloat16 and float64) before every call, so a
// write outside the output, or an output element never written, cannot go unnoticed.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "common/device_memory.hpp"
#include "rlk/safetensors.hpp"

namespace rlk::conform {

inline constexpr std::byte kPoisonByte{0xFF};

// Region transfers into and out of a DeviceBuffer (device_memory copies whole buffers only).
Result<void> copy_into(const tools::DeviceBuffer& buffer, std::size_t offset, std::span<const std::byte> host);
Result<void> copy_out_of(const tools::DeviceBuffer& buffer, std::size_t offset, std::span<std::byte> host);
Result<void> fill_region(const tools::DeviceBuffer& buffer, std::size_t offset, std::size_t bytes, std::byte value);

// A device buffer reused across calls: grows when a call needs more, never shrinks.
class ReusableBuffer {
 public:
  Result<const tools::DeviceBuffer*> reserve(const Device& device, std::size_t bytes);

 private:
  std::optional<tools::DeviceBuffer> buffer_;
};

class GuardedOutput {
 public:
  static constexpr std::size_t kGuardBytes = 256;  // keeps the output 256-byte aligned

  // Makes room for `payload` bytes, writes the canaries around them and poisons them.
  Result<void> arm(const Device& device, std::size_t payload);
  void* data() const;
  // A canary byte that differs names the side and offset of the first one.
  Result<void> check_canaries() const;
  Result<HostTensor> read(DType dtype, std::vector<std::int64_t> shape) const;

 private:
  ReusableBuffer memory_;
  const tools::DeviceBuffer* buffer_ = nullptr;
  std::size_t payload_ = 0;
};

}  // namespace rlk::conform
