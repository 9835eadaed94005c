// Finding and loading backend plugin libraries with Boost.DLL. Internal to the library.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "rlk/error.hpp"
#include "rlk/plugin_abi.h"

namespace rlk::plugins {

// A loaded plugin. Every operator created from it holds `library`, so the shared object
// stays mapped as long as anything from it is alive.
struct LoadedPlugin {
  std::shared_ptr<boost::dll::shared_library> library;
  const rlk_plugin* plugin = nullptr;
  std::filesystem::path path;
};

// File name of plugin `name` on this OS (librlk_backend_cuda.so for "rlk_backend_cuda").
std::string plugin_file_name(std::string_view name);

// Looks for the plugin file in each directory of `plugin_path`, in order. Every candidate
// looked at is appended to `examined`. Never searches the working directory.
Result<std::filesystem::path> find_plugin(std::string_view name,
                                          const std::vector<std::filesystem::path>& plugin_path,
                                          std::vector<std::filesystem::path>& examined);

// Loads with all symbols resolved now (RTLD_NOW), local scope, then checks the entry
// symbol, the ABI major version and the struct sizes.
Result<LoadedPlugin> load_plugin(const std::filesystem::path& file);

// Directory holding the rl-kernel library itself (the default plugin path).
std::filesystem::path library_directory();

}  // namespace rlk::plugins
