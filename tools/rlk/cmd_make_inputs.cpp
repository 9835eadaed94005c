// rlk make-inputs: a safetensors file of synthetic inputs for one direction of an operator,
// drawn as the spec's conformance section says, for `rlk run`.
#include <algorithm>
#include <iostream>
#include <memory>
#include <random>

#include "rlk/bfloat16.hpp"
#include "commands.hpp"

namespace rlk::cli {

namespace {

struct MakeInputsOptions {
  std::string key;
  std::string dtype;
  std::int64_t batch = 0;
  std::uint64_t seed = 0;
  std::string out;
  bool backward = false;
};

Result<void> make_inputs(Registry& registry, const MakeInputsOptions& options) {
  auto spec = registry.spec(options.key);
  if (!spec) return std::unexpected(spec.error());
  const OpSpec& s = **spec;
  auto dtype = parse_dtype(options.dtype);
  if (!dtype) return std::unexpected(dtype.error().with_context("--dtype"));
  if (auto allowed = check_spec_dtype(s, *dtype); !allowed) return allowed;

  const std::string& batch_symbol = s.conformance.batch_symbol;
  for (const SymbolSpec& symbol : s.symbols) {
    if (symbol.name != batch_symbol) {
      return fail(ErrorCode::not_implemented, s.key + " has symbol " + symbol.name + ", but make-inputs binds only " + batch_symbol);
    }
    if (options.batch < symbol.min || (symbol.max && options.batch > *symbol.max)) {
      return fail(ErrorCode::invalid_argument, "--batch " + std::to_string(options.batch) + " is outside [" +
                                                   std::to_string(symbol.min) + ", " +
                                                   (symbol.max ? std::to_string(*symbol.max) : "inf") + "] of " + batch_symbol);
    }
  }
  const SymbolBindings symbols = {{batch_symbol, options.batch}};
  const Direction direction = options.backward ? Direction::backward : Direction::forward;

  std::map<std::string, HostTensor> tensors;
  for (const ArgumentSpec* argument : s.arguments_of(direction)) {
    if (argument->writes()) continue;
    auto tensor = draw_input(s, *argument, *dtype, symbols, options.seed);
    if (!tensor) return std::unexpected(tensor.error());
    tensors.emplace(argument->name, std::move(*tensor));
  }
  const SafetensorsMetadata metadata = {{"key", s.key},
                                        {"dtype", std::string(to_string(*dtype))},
                                        {"direction", std::string(to_string(direction))},
                                        {batch_symbol, std::to_string(options.batch)},
                                        {"seed", std::to_string(options.seed)},
                                        {"spec_sha256", s.sha256}};
  if (auto written = write_safetensors(options.out, tensors, metadata); !written) return written;
  std::cout << "wrote " << tensors.size() << " " << to_string(direction) << " inputs of " << s.key << " (" << to_string(*dtype)
            << ", " << batch_symbol << " = " << options.batch << ", seed " << options.seed << ") to " << options.out << '\n';
  return {};
}

}  // namespace

void add_make_inputs_command(CLI::App& program, Command& selected) {
  auto options = std::make_shared<MakeInputsOptions>();
  CLI::App* command = program.add_subcommand(
      "make-inputs", "Write random inputs for KEY (the spec's conformance distributions) to a safetensors file for `rlk run`");
  command->add_option("KEY", options->key, "operator key, e.g. qwenimage_adaln_mod_projection")->required();
  command->add_option("--dtype", options->dtype, "execution dtype: fp32 or bf16")->required();
  command->add_option("--batch", options->batch, "extent of the batch symbol (B)")->required();
  command->add_option("--seed", options->seed, "random seed")->capture_default_str();
  command->add_option("--out", options->out, "safetensors file to write")->required();
  command->add_flag("--backward", options->backward, "inputs of the backward direction (default: forward)");
  command->callback([&selected, options] {
    selected = [options](Registry& registry) { return make_inputs(registry, *options); };
  });
}

}  // namespace rlk::cli
