// rlk explain: how the registry resolves a key, slot by slot, with every cause of a refusal.
#include <iostream>
#include <memory>

#include "commands.hpp"

namespace rlk::cli {
namespace {

struct ExplainOptions {
  std::string key;
  std::string device;
};

void print_field(std::string_view name, std::string_view value) {
  if (!value.empty()) std::cout << "      " << name << std::string(10 - name.size(), ' ') << value << '\n';
}

void print_slot(const OpSpec& spec, const SlotStatus& status) {
  const PlatformSlot* slot = spec.slot(status.platform);
  std::string kind = slot ? std::string(to_string(slot->kind)) : "absent from the spec";
  if (slot && !slot->library.empty()) kind += " " + slot->library;
  std::cout << "  " << to_string(status.platform) << ": " << kind << ", " << to_string(status.state) << '\n';
  print_field("reason:", status.reason);
  print_field("library:", status.library);
  for (std::size_t i = 0; i < status.examined.size(); ++i) {
    print_field(i == 0 ? "examined:" : "", status.examined[i].string());
  }
  print_field("build:", status.build_info);
}

Result<void> explain(Registry& registry, const ExplainOptions& options) {
  auto spec = registry.spec(options.key);
  if (!spec) return std::unexpected(spec.error());
  const OpSpec& s = **spec;
  std::string dtypes;
  for (DType dtype : s.dtypes()) dtypes += (dtypes.empty() ? "" : ", ") + std::string(to_string(dtype));
  std::cout << s.key << " (model " << s.model << ", version " << s.version << ")\n"
            << "  spec:    " << s.file.string() << '\n'
            << "  sha256:  " << s.sha256 << '\n'
            << "  dtypes:  " << dtypes << '\n'
            << "slots:\n";
  for (const SlotStatus& status : registry.status(s.key)) print_slot(s, status);
  if (options.device.empty()) return {};

  auto device = parse_device(options.device);
  if (!device) return std::unexpected(device.error().with_context("--device"));
  std::cout << "device " << to_string(*device) << ":\n";
  print_slot(s, registry.status(s.key, *device));
  return {};
}

}  // namespace

void add_explain_command(CLI::App& program, Command& selected) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* command = program.add_subcommand(
      "explain", "Show how KEY resolves: spec file and hash, and for each platform slot its kind, state, "
                 "reason, library, the files examined and the plugin's build");
  command->add_option("KEY", options->key, "operator key, e.g. qwenimage_adaln_mod_projection")->required();
  command->add_option("--device", options->device,
                      "also resolve for this device (cpu, cuda:N, ...), including the plugin's device probe");
  command->callback([&selected, options] {
    selected = [options](Registry& registry) { return explain(registry, *options); };
  });
}

}  // namespace rlk::cli
