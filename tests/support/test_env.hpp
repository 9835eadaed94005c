// Shared by the test suites: where the test specs and plugins are, and registries over them.
#pragma once

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "rlk/registry.hpp"

namespace rlk::test {

inline std::shared_ptr<Registry> open_registry(std::vector<std::filesystem::path> specs,
                                               std::vector<std::filesystem::path> plugins) {
  auto registry = Registry::open(RegistryOptions{std::move(specs), std::move(plugins)});
  // GoogleTest reports the exception as the test's failure.
  if (!registry) throw std::runtime_error(registry.error().to_string());
  return *registry;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A DLTensor over host memory that claims to live on `device` (test plugins read host memory).
inline DLTensor host_tensor(float* data, std::vector<int64_t>& shape, DLDevice device = {kDLCPU, 0}) {
  DLTensor t{};
  t.data = data;
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

}  // namespace rlk::test
