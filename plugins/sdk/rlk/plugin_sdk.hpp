// The plugin-side SDK: what a backend library needs to serve the plain-C ABI in
// plugin_abi.h from C++ without letting an exception or a C++ type cross the boundary.
// Header-only, so a plugin links nothing of the host.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "rlk/plugin_abi.h"

namespace rlk::sdk {

// Thrown inside a plugin to refuse with a specific status; caught by `guarded`.
struct PluginError {
  rlk_status_code code;
  std::string message;
};

inline void write_message(char* buffer, std::size_t capacity, std::string_view text) {
  if (buffer == nullptr || capacity == 0) return;
  const std::size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

// Runs `body` and turns every outcome into a status code plus a message: the only
// way a plugin's C entry points should be written.
template <class Body>
int32_t guarded(char* message, std::size_t capacity, Body&& body) noexcept {
  try {
    body();
    write_message(message, capacity, "");
    return RLK_STATUS_OK;
  } catch (const PluginError& e) {
    write_message(message, capacity, e.message);
    return e.code;
  } catch (const std::exception& e) {
    write_message(message, capacity, std::string("unexpected exception: ") + e.what());
    return RLK_STATUS_INTERNAL;
  } catch (...) {
    write_message(message, capacity, "unexpected non-standard exception");
    return RLK_STATUS_INTERNAL;
  }
}

// The tensor named `name` in a call; refuses with INVALID_ARGUMENT naming it when absent.
inline const DLTensor& argument(const rlk_call& call, std::string_view name) {
  for (uint32_t i = 0; i < call.num_args; ++i) {
    if (call.args[i].name != nullptr && name == call.args[i].name && call.args[i].tensor != nullptr) {
      return *call.args[i].tensor;
    }
  }
  throw PluginError{RLK_STATUS_INVALID_ARGUMENT, "missing argument '" + std::string(name) + "'"};
}

// Address of a tensor's first element.
inline void* data_of(const DLTensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.byte_offset;
}

}  // namespace rlk::sdk

// Exports the plugin's single entry point with default visibility (plugins build hidden).
#define RLK_EXPORT_PLUGIN(plugin_object)                                          \
  extern "C" __attribute__((visibility("default"))) const rlk_plugin* rlk_plugin_entry(void) { \
    return &(plugin_object);                                                       \
  }
