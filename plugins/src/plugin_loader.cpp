#include "rlk/plugin_loader.hpp"

#include <cstddef>

#include <boost/dll/runtime_symbol_info.hpp>

namespace rlk::plugins {
namespace {
// rlk_plugin as ABI 1.0 defined it: a plugin must fill at least this much.
constexpr std::size_t kPluginStructSize_1_0 = offsetof(rlk_plugin, probe) + sizeof(rlk_plugin::probe);
}  // namespace

std::string plugin_file_name(std::string_view name) {
  return "lib" + std::string(name) + ".so";
}

Result<std::filesystem::path> find_plugin(std::string_view name,
                                          const std::vector<std::filesystem::path>& plugin_path,
                                          std::vector<std::filesystem::path>& examined) {
  const std::string file_name = plugin_file_name(name);
  for (const auto& directory : plugin_path) {
    const auto candidate = directory / file_name;
    examined.push_back(candidate);
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  std::string searched;
  for (const auto& p : examined) searched += (searched.empty() ? "" : ", ") + p.string();
  if (plugin_path.empty()) searched = "an empty plugin path";
  return fail(ErrorCode::library_not_found, "plugin file " + file_name + " not found (searched " + searched + ")");
}

Result<LoadedPlugin> load_plugin(const std::filesystem::path& file) {
  LoadedPlugin loaded;
  loaded.path = file;
  try {
    loaded.library = std::make_shared<boost::dll::shared_library>(
        file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return fail(ErrorCode::load_error, file.string() + ": cannot load: " + e.what());
  }
  if (!loaded.library->has(RLK_PLUGIN_ENTRY_SYMBOL)) {
    return fail(ErrorCode::load_error,
                file.string() + ": entry symbol '" RLK_PLUGIN_ENTRY_SYMBOL "' missing (export it with RLK_EXPORT_PLUGIN)");
  }
  const auto entry = loaded.library->get<const rlk_plugin*()>(RLK_PLUGIN_ENTRY_SYMBOL);
  loaded.plugin = entry();
  if (loaded.plugin == nullptr) {
    return fail(ErrorCode::load_error, file.string() + ": " RLK_PLUGIN_ENTRY_SYMBOL " returned NULL");
  }
  if (loaded.plugin->abi_major != RLK_PLUGIN_ABI_MAJOR) {
    return fail(ErrorCode::abi_mismatch, file.string() + ": plugin ABI version " +
                                             std::to_string(loaded.plugin->abi_major) + "." +
                                             std::to_string(loaded.plugin->abi_minor) + ", host ABI version " +
                                             std::to_string(RLK_PLUGIN_ABI_MAJOR) + "." +
                                             std::to_string(RLK_PLUGIN_ABI_MINOR) + " (major versions must match)");
  }
  if (loaded.plugin->struct_size < kPluginStructSize_1_0) {
    return fail(ErrorCode::abi_mismatch, file.string() + ": rlk_plugin struct_size " +
                                             std::to_string(loaded.plugin->struct_size) + " is smaller than ABI 1.0's " +
                                             std::to_string(kPluginStructSize_1_0));
  }
  if (loaded.plugin->platform == nullptr || (loaded.plugin->num_ops > 0 && loaded.plugin->ops == nullptr)) {
    return fail(ErrorCode::load_error, file.string() + ": rlk_plugin has no platform or a NULL operator table");
  }
  return loaded;
}

std::filesystem::path library_directory() {
  std::error_code ec;
  const auto directory = boost::dll::this_line_location().parent_path();
  const auto canonical = std::filesystem::weakly_canonical(directory, ec);  // "bin/../lib" reads as "lib"
  return ec ? directory.lexically_normal() : canonical;
}

}  // namespace rlk::plugins
