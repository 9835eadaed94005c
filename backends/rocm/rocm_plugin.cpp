// The ROCm backend plugin: built against HIP headers, loads everywhere, and refuses every
// operator with a diagnostic reason (no HIP kernels exist yet). It never links the HIP
// runtime, so loading it cannot fail for lack of one; the probe looks for it at run time.
#include <string>

#include <boost/dll/shared_library.hpp>
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

#include "rlk/plugin_sdk.hpp"

namespace {

const std::string kHeaders = "HIP " + std::to_string(HIP_VERSION_MAJOR) + "." + std::to_string(HIP_VERSION_MINOR) + "." +
                             std::to_string(HIP_VERSION_PATCH) + " headers";

// Describes the HIP runtime on this machine: whether libamdhip64 loads and how many devices it sees.
std::string runtime_diagnostic() {
  try {
    boost::dll::shared_library hip("libamdhip64.so", boost::dll::load_mode::search_system_folders |
                                                         boost::dll::load_mode::rtld_now);
    int count = 0;
    const auto get_count = hip.get<hipError_t(int*)>("hipGetDeviceCount");
    const hipError_t status = get_count(&count);
    if (status != hipSuccess) {
      const auto error_name = hip.get<const char*(hipError_t)>("hipGetErrorName");
      return "HIP runtime present, hipGetDeviceCount failed: " + std::string(error_name(status));
    }
    return "HIP runtime present with " + std::to_string(count) + " device(s)";
  } catch (const std::exception& e) {
    return std::string("HIP runtime libamdhip64.so not loadable: ") + e.what();
  }
}

int32_t probe(int32_t, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [] {
    throw rlk::sdk::PluginError{RLK_STATUS_UNSUPPORTED,
                                "ROCm plugin built against " + kHeaders + " has no HIP kernels; " + runtime_diagnostic()};
  });
}

int32_t create_adaln(const rlk_op_create_args*, void**, const rlk_op_vtable**, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [] {
    throw rlk::sdk::PluginError{RLK_STATUS_UNSUPPORTED,
                                "qwenimage_adaln_mod_projection has no HIP implementation (built against " + kHeaders + ")"};
  });
}

const rlk_op_entry kOps[] = {
    {"qwenimage_adaln_mod_projection", RLK_QWENIMAGE_ADALN_SPEC_SHA256, create_adaln},
};

const rlk_plugin kPlugin = {
    RLK_PLUGIN_ABI_MAJOR, RLK_PLUGIN_ABI_MINOR, sizeof(rlk_plugin), "rocm", "g++ against HIP headers, no kernels",
    sizeof(kOps) / sizeof(kOps[0]), kOps, probe,
};

}  // namespace

RLK_EXPORT_PLUGIN(kPlugin)
