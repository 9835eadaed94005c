// A device names where an operator runs: "cpu", "cuda:N", "rocm:N", "npu:N", "musa:N".
#pragma once

#include <string>
#include <string_view>

#include "rlk/error.hpp"

namespace rlk {

enum class Platform { cpu, cuda, rocm, npu, musa };

inline constexpr Platform kAllPlatforms[] = {Platform::cpu, Platform::cuda, Platform::rocm,
                                             Platform::npu, Platform::musa};

std::string_view to_string(Platform platform);
Result<Platform> parse_platform(std::string_view text);

struct Device {
  Platform platform = Platform::cpu;
  int index = 0;

  friend bool operator==(const Device&, const Device&) = default;
};

std::string to_string(const Device& device);
// Accepts "cpu", "cpu:0", "cuda" (= cuda:0) and "<platform>:<N>".
Result<Device> parse_device(std::string_view text);

}  // namespace rlk
