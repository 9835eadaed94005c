#include "rlk/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "op_instance.hpp"
#include "rlk/plugin_loader.hpp"
#include "rlk/reference.hpp"

namespace rlk {
namespace fs = std::filesystem;

std::string_view to_string(SlotState state) {
  switch (state) {
    case SlotState::available: return "available";
    case SlotState::not_implemented: return "not implemented";
    case SlotState::library_not_found: return "library not found";
    case SlotState::load_error: return "load error";
    case SlotState::abi_mismatch: return "ABI mismatch";
    case SlotState::probe_failed: return "probe failed";
    case SlotState::spec_mismatch: return "spec mismatch";
    case SlotState::duplicate: return "duplicate";
  }
  return "?";
}

namespace {

SlotState state_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::library_not_found: return SlotState::library_not_found;
    case ErrorCode::abi_mismatch: return SlotState::abi_mismatch;
    case ErrorCode::spec_mismatch: return SlotState::spec_mismatch;
    case ErrorCode::duplicate: return SlotState::duplicate;
    case ErrorCode::probe_failed:
    case ErrorCode::no_device: return SlotState::probe_failed;
    case ErrorCode::not_implemented: return SlotState::not_implemented;
    default: return SlotState::load_error;
  }
}

ErrorCode code_of(SlotState state) {
  switch (state) {
    case SlotState::library_not_found: return ErrorCode::library_not_found;
    case SlotState::abi_mismatch: return ErrorCode::abi_mismatch;
    case SlotState::spec_mismatch: return ErrorCode::spec_mismatch;
    case SlotState::duplicate: return ErrorCode::duplicate;
    case SlotState::probe_failed: return ErrorCode::probe_failed;
    case SlotState::not_implemented: return ErrorCode::not_implemented;
    default: return ErrorCode::load_error;
  }
}

std::vector<fs::path> split_path_list(const char* text) {
  std::vector<fs::path> paths;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ':')) {
    if (!item.empty()) paths.emplace_back(item);
  }
  return paths;
}

// The build tree marks its library directory with a file naming the source specs/
// directory relative to it; an installed tree has none and uses <prefix>/share.
fs::path default_spec_directory() {
  const fs::path library_dir = plugins::library_directory();
  std::ifstream marker(library_dir / "rlk_build_tree_specs.txt");
  std::string relative;
  if (marker && std::getline(marker, relative) && !relative.empty()) return (library_dir / relative).lexically_normal();
  return (library_dir.parent_path() / "share" / "rl-kernel" / "specs").lexically_normal();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

struct LibraryLoad {
  std::optional<plugins::LoadedPlugin> plugin;
  std::optional<Error> error;
  std::vector<fs::path> examined;
};

}  // namespace

struct Registry::Impl {
  RegistryOptions options;
  std::vector<OpSpec> specs;
  std::map<std::string, std::shared_ptr<const OpSpec>, std::less<>> by_key;

  std::mutex mutex;  // guards libraries and probes
  std::map<std::string, LibraryLoad> libraries;
  std::map<std::pair<std::string, int>, std::optional<Error>> probes;

  const LibraryLoad& load_library(const std::string& name) {
    auto [it, inserted] = libraries.try_emplace(name);
    if (!inserted) return it->second;
    LibraryLoad& load = it->second;
    auto file = plugins::find_plugin(name, options.plugin_path, load.examined);
    if (!file) {
      load.error = file.error();
      return load;
    }
    auto loaded = plugins::load_plugin(*file);
    if (loaded) load.plugin = std::move(*loaded);
    else load.error = loaded.error();
    return load;
  }

  struct Resolution {
    SlotStatus status;
    const rlk_op_entry* entry = nullptr;
    std::optional<plugins::LoadedPlugin> plugin;
  };

  // Device-independent resolution of one slot. Caller holds `mutex`.
  Resolution resolve(const OpSpec& spec, Platform platform) {
    Resolution r;
    r.status.key = spec.key;
    r.status.platform = platform;
    const PlatformSlot* slot = spec.slot(platform);
    const std::string where = "spec " + spec.file.string() + ", slot " + std::string(to_string(platform));
    auto refuse = [&](SlotState state, const std::string& reason) {
      r.status.state = state;
      r.status.reason = where + ": " + reason;
      return r;
    };
    if (slot->kind == SlotKind::reference) {
      if (reference::find_reference(spec.key) == nullptr) {
        return refuse(SlotState::not_implemented, "no CPU reference is registered for '" + spec.key + "' (reference/reference_table.cpp)");
      }
      r.status.state = SlotState::available;
      r.status.library = "reference";
      return r;
    }
    std::string plugin_note;
    if (!slot->library.empty()) {
      const LibraryLoad& load = load_library(slot->library);
      r.status.examined = load.examined;
      if (load.plugin) {
        r.status.library = load.plugin->path.string();
        r.status.build_info = load.plugin->plugin->build_info ? load.plugin->plugin->build_info : "";
      }
      if (slot->kind == SlotKind::plugin && load.error) {
        return refuse(state_of(load.error->code()), "plugin " + slot->library + ": " + load.error->to_string());
      }
      if (load.error) plugin_note = "; plugin " + slot->library + " also unusable: " + load.error->to_string();
      if (load.plugin) {
        const rlk_plugin& plugin = *load.plugin->plugin;
        int matches = 0;
        for (uint32_t i = 0; i < plugin.num_ops; ++i) {
          if (plugin.ops[i].key != nullptr && spec.key == plugin.ops[i].key) {
            ++matches;
            r.entry = &plugin.ops[i];
          }
        }
        const std::string file = load.plugin->path.string();
        if (slot->kind == SlotKind::fail_closed) {
          plugin_note = "; plugin " + file + " loaded (ABI " + std::to_string(plugin.abi_major) + "." +
                        std::to_string(plugin.abi_minor) + ", platform " + plugin.platform + ")";
          if (plugin.probe != nullptr) {
            char message[1024] = {};
            if (plugin.probe(0, message, sizeof message) != RLK_STATUS_OK) plugin_note += " and refuses: " + std::string(message);
          }
        } else if (std::string_view(plugin.platform) != to_string(platform)) {
          return refuse(SlotState::load_error, "plugin " + file + " serves platform '" + plugin.platform + "', not '" +
                                                   std::string(to_string(platform)) + "'");
        } else if (matches > 1) {
          return refuse(SlotState::duplicate, "plugin " + file + " lists key '" + spec.key + "' " + std::to_string(matches) +
                                                  " times; a (key, platform) pair must be served once");
        } else if (matches == 0) {
          return refuse(SlotState::not_implemented, "plugin " + file + " does not serve key '" + spec.key + "'");
        } else if (r.entry->spec_sha256 == nullptr || spec.sha256 != r.entry->spec_sha256) {
          return refuse(SlotState::spec_mismatch, "spec mismatch: plugin " + file + " was built against spec sha256 " +
                                                      (r.entry->spec_sha256 ? r.entry->spec_sha256 : "(none)") +
                                                      ", the loaded spec has sha256 " + spec.sha256 + "; rebuild the plugin");
        } else {
          r.plugin = load.plugin;
        }
      }
    }
    if (slot->kind == SlotKind::fail_closed) {
      r.entry = nullptr;
      return refuse(SlotState::not_implemented, "fail-closed: " + slot->reason + plugin_note);
    }
    r.status.state = SlotState::available;
    return r;
  }

  // Probes `plugin` for a device once and caches the outcome. Caller holds `mutex`.
  std::optional<Error> probe(const plugins::LoadedPlugin& plugin, const Device& device) {
    const auto key = std::make_pair(plugin.path.string(), device.index);
    if (auto it = probes.find(key); it != probes.end()) return it->second;
    std::optional<Error> outcome;
    if (plugin.plugin->probe != nullptr) {
      char message[1024] = {};
      const int32_t status = plugin.plugin->probe(device.index, message, sizeof message);
      if (status != RLK_STATUS_OK) {
        const ErrorCode code = status == RLK_STATUS_NO_DEVICE ? ErrorCode::no_device : ErrorCode::probe_failed;
        outcome = Error(code, "probe of " + to_string(device) + " by " + plugin.path.string() + " failed: " + message);
      }
    }
    probes.emplace(key, outcome);
    return outcome;
  }

  std::string nearest_keys(std::string_view key) const {
    std::vector<std::pair<std::size_t, std::string>> ranked;
    for (const auto& spec : specs) ranked.emplace_back(edit_distance(key, spec.key), spec.key);
    std::sort(ranked.begin(), ranked.end());
    std::string text;
    for (std::size_t i = 0; i < ranked.size() && i < 3; ++i) text += (i ? ", " : "") + ranked[i].second;
    return text.empty() ? "no specs are loaded" : "nearest known keys: " + text;
  }
};

Registry::Registry(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Registry::~Registry() = default;

Result<std::shared_ptr<Registry>> Registry::open(RegistryOptions options) {
  if (options.spec_path.empty()) {
    if (const char* env = std::getenv("RLK_SPEC_PATH"); env != nullptr && *env != '\0') options.spec_path = split_path_list(env);
    else options.spec_path = {default_spec_directory()};
  }
  if (options.plugin_path.empty()) {
    if (const char* env = std::getenv("RLK_PLUGIN_PATH"); env != nullptr && *env != '\0') options.plugin_path = split_path_list(env);
    else options.plugin_path = {plugins::library_directory()};
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::vector<fs::path> files;
  for (const auto& directory : options.spec_path) {
    std::error_code ec;
    if (!fs::is_directory(directory, ec)) {
      return fail(ErrorCode::io_error, "spec path entry " + directory.string() + " is not a directory (set RLK_SPEC_PATH)");
    }
    for (const auto& entry : fs::recursive_directory_iterator(directory)) {
      const auto extension = entry.path().extension();
      if (entry.is_regular_file() && (extension == ".yaml" || extension == ".yml")) files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    auto spec = load_spec_file(file);
    if (!spec) return std::unexpected(spec.error().with_context("loading specs"));
    if (const auto it = impl->by_key.find(spec->key); it != impl->by_key.end()) {
      return fail(ErrorCode::duplicate, "key '" + spec->key + "' is defined twice: " + it->second->file.string() + " and " +
                                            file.string());
    }
    auto shared = std::make_shared<const OpSpec>(*spec);
    impl->by_key.emplace(shared->key, shared);
    impl->specs.push_back(std::move(*spec));
  }
  return std::shared_ptr<Registry>(new Registry(std::move(impl)));
}

Result<std::shared_ptr<Registry>> Registry::global() {
  static std::once_flag once;
  static std::optional<Result<std::shared_ptr<Registry>>> instance;
  std::call_once(once, [] { instance = open(); });
  return *instance;
}

const std::vector<OpSpec>& Registry::specs() const { return impl_->specs; }
const RegistryOptions& Registry::options() const { return impl_->options; }

const OpSpec* Registry::find_spec(std::string_view key) const {
  const auto it = impl_->by_key.find(key);
  return it == impl_->by_key.end() ? nullptr : it->second.get();
}

Result<const OpSpec*> Registry::spec(std::string_view key) const {
  if (const OpSpec* found = find_spec(key)) return found;
  return fail(ErrorCode::unknown_key, "unknown key '" + std::string(key) + "'; " + impl_->nearest_keys(key));
}

Result<Op> Registry::get_op(std::string_view key, std::string_view device) {
  auto parsed = parse_device(device);
  if (!parsed) return std::unexpected(parsed.error().with_context("get_op(" + std::string(key) + ")"));
  return get_op(key, *parsed);
}

Result<Op> Registry::get_op(std::string_view key, const Device& device) {
  const std::string context = "get_op(" + std::string(key) + ", " + to_string(device) + ")";
  if (auto known = this->spec(key); !known) return std::unexpected(known.error().with_context(context));
  const std::shared_ptr<const OpSpec>& spec = impl_->by_key.find(key)->second;
  std::lock_guard lock(impl_->mutex);
  auto resolution = impl_->resolve(*spec, device.platform);
  if (resolution.status.state != SlotState::available) {
    return std::unexpected(Error(code_of(resolution.status.state), resolution.status.reason).with_context(context));
  }
  auto instance = std::make_shared<detail::OpInstance>();
  instance->spec = spec;
  instance->device = device;
  if (spec->slot(device.platform)->kind == SlotKind::reference) {
    instance->implementation = "reference";
    instance->backend = detail::make_reference_backend(*reference::find_reference(spec->key));
    return Op(std::move(instance));
  }
  const plugins::LoadedPlugin& plugin = *resolution.plugin;
  const std::string where = "spec " + spec->file.string() + ", slot " + std::string(to_string(device.platform)) + ", plugin " +
                            plugin.path.string();
  if (auto probe_error = impl_->probe(plugin, device)) {
    return std::unexpected(probe_error->with_context(where).with_context(context));
  }
  rlk_op_create_args args{};
  args.struct_size = sizeof args;
  args.device_index = device.index;
  void* self = nullptr;
  const rlk_op_vtable* vtable = nullptr;
  char message[1024] = {};
  const int32_t status = resolution.entry->create(&args, &self, &vtable, message, sizeof message);
  if (status != RLK_STATUS_OK || self == nullptr || vtable == nullptr) {
    const std::string reason = status != RLK_STATUS_OK ? std::string(message) : "create returned no operator";
    return std::unexpected(Error(detail::error_code_of(status == RLK_STATUS_OK ? RLK_STATUS_INTERNAL : status),
                                 "create failed: " + reason)
                               .with_context(where)
                               .with_context(context));
  }
  instance->implementation = plugin.path.string();
  instance->backend = detail::make_plugin_backend(plugin, self, vtable);
  return Op(std::move(instance));
}

std::vector<SlotStatus> Registry::status(std::string_view key) {
  std::vector<SlotStatus> table;
  const OpSpec* spec = find_spec(key);
  if (spec == nullptr) return table;
  std::lock_guard lock(impl_->mutex);
  for (Platform platform : kAllPlatforms) table.push_back(impl_->resolve(*spec, platform).status);
  return table;
}

SlotStatus Registry::status(std::string_view key, const Device& device) {
  auto op = get_op(key, device);
  SlotStatus status;
  {
    const OpSpec* spec = find_spec(key);
    if (spec != nullptr) {
      std::lock_guard lock(impl_->mutex);
      status = impl_->resolve(*spec, device.platform).status;
    }
  }
  status.key = std::string(key);
  status.platform = device.platform;
  if (!op) {
    status.state = state_of(op.error().code());
    status.reason = op.error().to_string();
  }
  return status;
}

Result<Op> get_op(std::string_view key, std::string_view device) {
  auto registry = Registry::global();
  if (!registry) return std::unexpected(registry.error().with_context("get_op(" + std::string(key) + ")"));
  return (*registry)->get_op(key, device);
}

}  // namespace rlk
