// Device handling shared by every CUDA operator of the plugin.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "rlk/plugin_sdk.hpp"

namespace rlk::cuda {

// Throws a PluginError naming `what` when `status` is not cudaSuccess.
void check(cudaError_t status, const std::string& what, rlk_status_code code = RLK_STATUS_RUNTIME_ERROR);

// Makes `device` current for the scope and restores the caller's device afterwards, so an
// operator runs on the device of its tensors whatever device the caller has current.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// Checks that `device` exists, has a compute capability this build carries code for and
// passes the strict-math probe; the outcome is cached per device. Throws PluginError.
void require_usable_device(int device);

}  // namespace rlk::cuda
