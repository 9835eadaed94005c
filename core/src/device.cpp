#include "rlk/device.hpp"

#include <charconv>

namespace rlk {

std::string_view to_string(Platform platform) {
  switch (platform) {
    case Platform::cpu: return "cpu";
    case Platform::cuda: return "cuda";
    case Platform::rocm: return "rocm";
    case Platform::npu: return "npu";
    case Platform::musa: return "musa";
  }
  return "?";
}

Result<Platform> parse_platform(std::string_view text) {
  for (Platform platform : kAllPlatforms) {
    if (text == to_string(platform)) return platform;
  }
  return fail(ErrorCode::invalid_argument,
              "unknown platform '" + std::string(text) + "' (expected cpu, cuda, rocm, npu or musa)");
}

std::string to_string(const Device& device) {
  if (device.platform == Platform::cpu) return "cpu";
  return std::string(to_string(device.platform)) + ":" + std::to_string(device.index);
}

Result<Device> parse_device(std::string_view text) {
  const auto colon = text.find(':');
  auto platform = parse_platform(text.substr(0, colon));
  if (!platform) {
    return std::unexpected(platform.error().with_context("device '" + std::string(text) + "'"));
  }
  Device device{*platform, 0};
  if (colon != std::string_view::npos) {
    const std::string_view digits = text.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device.index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || device.index < 0) {
      return fail(ErrorCode::invalid_argument,
                  "device '" + std::string(text) + "': expected a non-negative index after ':'");
    }
    if (device.platform == Platform::cpu && device.index != 0) {
      return fail(ErrorCode::invalid_argument, "device '" + std::string(text) + "': the cpu device has index 0 only");
    }
  }
  return device;
}

}  // namespace rlk
