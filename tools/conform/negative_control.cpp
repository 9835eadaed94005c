#include "negative_control.hpp"

#include <string>

#include "negative_controls/qwenimage_adaln.hpp"

namespace rlk::conform {

Result<Implementation> find_negative_control(std::string_view key, const Device& device) {
  if (key == "qwenimage_adaln_mod_projection") {
    if (device.platform == Platform::cpu) return qwenimage::adaln_blocked_cpu(device);
    if (device.platform == Platform::cuda) return qwenimage::adaln_cublas(device);
  }
  return fail(ErrorCode::not_implemented, "no negative control for " + std::string(key) + " on " + to_string(device) +
                                              " (tools/conform/negative_control.cpp)");
}

}  // namespace rlk::conform
