#include "environment.hpp"

#include <fstream>
#include <thread>

#include "rlk_commit.hpp"

#ifdef RLK_WITH_CUDA
#include <cuda_runtime.h>
#endif

#ifndef RLK_VERSION
#define RLK_VERSION "unknown"
#endif
#ifndef RLK_CXX_FLAGS
#define RLK_CXX_FLAGS ""
#endif

namespace rlk::conform {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

#ifdef RLK_WITH_CUDA
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
#endif

}  // namespace

Environment describe_environment(const Device& device, const OpSpec& spec, const std::string& implementation,
                                 const std::string& build_info) {
  Environment env;
  nlohmann::json& h = env.header;
  h["device"] = to_string(device);
  h["host_cpu"] = cpu_model();
  h["host_threads"] = std::thread::hardware_concurrency();
  h["implementation"] = implementation;
  h["plugin_build"] = build_info;
  h["compiler"] = std::string("g++ ") + __VERSION__;
  h["compiler_flags"] = RLK_CXX_FLAGS;
  h["library_version"] = RLK_VERSION;
  h["git_commit"] = RLK_GIT_COMMIT;
  h["spec"] = {{"key", spec.key}, {"version", spec.version}, {"file", spec.file.string()}, {"sha256", spec.sha256}};
  h["seeds"] = spec.conformance.seeds;
  std::string arch = h["host_cpu"];
  std::string driver = "none";
  std::string runtime = "none";
#ifdef RLK_WITH_CUDA
  if (device.platform == Platform::cuda) {
    cudaDeviceProp properties{};
    int driver_version = 0;
    int runtime_version = 0;
    if (cudaGetDeviceProperties(&properties, device.index) == cudaSuccess) {
      h["device_name"] = properties.name;
      h["compute_capability"] = std::to_string(properties.major) + "." + std::to_string(properties.minor);
      h["multiprocessors"] = properties.multiProcessorCount;
      arch = "sm_" + std::to_string(properties.major) + std::to_string(properties.minor) + " " + properties.name;
    }
    cudaDriverGetVersion(&driver_version);
    cudaRuntimeGetVersion(&runtime_version);
    driver = cuda_version(driver_version);
    runtime = cuda_version(runtime_version);
    h["cuda_driver"] = driver;
    h["cuda_runtime"] = runtime;
  }
#endif
  if (device.platform == Platform::cpu) h["device_name"] = h["host_cpu"];
  env.fingerprint = arch + " | driver " + driver + " | runtime " + runtime + " | " + RLK_GIT_COMMIT + " " +
                    (build_info.empty() ? implementation : build_info);
  h["fingerprint"] = env.fingerprint;
  return env;
}

}  // namespace rlk::conform
