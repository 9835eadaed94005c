// rlk run: one call of an operator on one device, inputs and outputs as safetensors files.
// The file's dtypes must be the execution dtype: nothing is converted on the way in or out.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "common/device_memory.hpp"
#include "commands.hpp"

namespace rlk::cli {
namespace {

struct RunCommandOptions {
  std::string key;
  std::string device;
  std::string dtype;
  std::string inputs;
  std::string out;
  bool backward = false;
  bool seed_missing = false;
  std::uint64_t seed = 0;
};

std::string names_of(const std::vector<const ArgumentSpec*>& arguments) {
  std::string text;
  for (const ArgumentSpec* argument : arguments) text += (text.empty() ? "" : ", ") + argument->name;
  return text;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Reads the inputs of `direction` from the file, refusing any other tensor and any dtype but
// `dtype`, and binds the spec's symbols from their shapes (full shape checks are the op's).
Result<std::map<std::string, HostTensor>> read_inputs(const OpSpec& spec, Direction direction, DType dtype,
                                                      const RunCommandOptions& options, SymbolBindings& symbols) {
  auto file = read_safetensors(options.inputs);
  if (!file) return std::unexpected(file.error().with_context("--inputs"));
  std::vector<const ArgumentSpec*> inputs;
  for (const ArgumentSpec* argument : spec.arguments_of(direction)) {
    if (!argument->writes()) inputs.push_back(argument);
  }
  const std::string where = options.inputs + ": ";
  for (const auto& [name, tensor] : *file) {
    if (std::ranges::none_of(inputs, [&](const ArgumentSpec* a) { return a->name == name; })) {
      return fail(ErrorCode::invalid_argument, where + "tensor '" + name + "' is not an input of " + spec.key + " " +
                                                   std::string(to_string(direction)) + " (inputs: " + names_of(inputs) + ")");
    }
    if (tensor.dtype != dtype) {
      return fail(ErrorCode::invalid_argument, where + "tensor '" + name + "' is " + std::string(to_string(tensor.dtype)) +
                                                   " but --dtype is " + std::string(to_string(dtype)) +
                                                   "; rlk does not convert dtypes, write the file in the execution dtype");
    }
  }
  std::vector<const ArgumentSpec*> missing;
  for (const ArgumentSpec* argument : inputs) {
    const auto found = file->find(argument->name);
    if (found == file->end()) {
      missing.push_back(argument);
      continue;
    }
    if (found->second.shape.size() != argument->shape.size()) {
      return fail(ErrorCode::invalid_argument, where + "tensor '" + argument->name + "' has shape " + shape_text(found->second.shape) +
                                                   " but the spec gives it " + std::to_string(argument->shape.size()) + " dimensions");
    }
    for (std::size_t i = 0; i < argument->shape.size(); ++i) {
      if (!argument->shape[i].symbol.empty()) symbols.emplace(argument->shape[i].symbol, found->second.shape[i]);
    }
  }
  if (!missing.empty() && !options.seed_missing) {
    return fail(ErrorCode::invalid_argument, where + "missing " + names_of(missing) + " (" + std::string(to_string(direction)) +
                                                 " needs " + names_of(inputs) + "; --seed-missing draws absent inputs)");
  }
  for (const ArgumentSpec* argument : missing) {
    auto drawn = draw_input(spec, *argument, dtype, symbols, options.seed);
    if (!drawn) return std::unexpected(drawn.error().with_context("--seed-missing"));
    file->emplace(argument->name, std::move(*drawn));
  }
  return file;
}

Result<void> run(Registry& registry, const RunCommandOptions& options) {
  auto device = parse_device(options.device);
  if (!device) return std::unexpected(device.error().with_context("--device"));
  auto dtype = parse_dtype(options.dtype);
  if (!dtype) return std::unexpected(dtype.error().with_context("--dtype"));
  auto op = registry.get_op(options.key, *device);
  if (!op) return std::unexpected(op.error());
  const OpSpec& spec = op->spec();
  if (auto allowed = check_spec_dtype(spec, *dtype); !allowed) return allowed;
  const Direction direction = options.backward ? Direction::backward : Direction::forward;

  SymbolBindings symbols;
  auto inputs = read_inputs(spec, direction, *dtype, options, symbols);
  if (!inputs) return std::unexpected(inputs.error());
  std::map<std::string, HostTensor> outputs;
  for (const ArgumentSpec* argument : spec.arguments_of(direction)) {
    if (!argument->writes()) continue;
    auto shape = bind_shape(*argument, symbols);
    if (!shape) return std::unexpected(shape.error());
    outputs.emplace(argument->name, HostTensor::zeros(*dtype, std::move(*shape)));
  }

  // Buffers are keyed like `args`; the views point at the host tensors' shapes.
  std::map<std::string, tools::DeviceBuffer> buffers;
  TensorMap args;
  auto place = [&](const std::string& name, HostTensor& host, bool is_output) -> Result<void> {
    auto buffer = tools::DeviceBuffer::allocate(*device, host.bytes.size());
    if (!buffer) return std::unexpected(buffer.error().with_context("argument '" + name + "'"));
    // All-ones bytes are NaN in every float dtype: an output the op leaves unwritten shows.
    auto filled = is_output ? buffer->fill(std::byte{0xff}) : buffer->copy_from_host(host.bytes);
    if (!filled) return std::unexpected(filled.error().with_context("argument '" + name + "'"));
    auto view = buffer->view(host.dtype, host.shape);
    if (!view) return std::unexpected(view.error().with_context("argument '" + name + "'"));
    args.emplace(name, *view);
    buffers.emplace(name, std::move(*buffer));
    return {};
  };
  for (auto& [name, host] : *inputs) {
    if (auto placed = place(name, host, false); !placed) return placed;
  }
  for (auto& [name, host] : outputs) {
    if (auto placed = place(name, host, true); !placed) return placed;
  }

  auto workspace_bytes = op->workspace_bytes(direction, args);
  if (!workspace_bytes) return std::unexpected(workspace_bytes.error());
  std::optional<tools::DeviceBuffer> workspace;
  if (*workspace_bytes > 0) {
    auto allocated = tools::DeviceBuffer::allocate(*device, *workspace_bytes);
    if (!allocated) return std::unexpected(allocated.error().with_context("workspace"));
    workspace = std::move(*allocated);
  }
  auto stream = tools::Stream::create(*device);
  if (!stream) return std::unexpected(stream.error());
  RunOptions run_options;
  run_options.stream = stream->handle();
  run_options.workspace = workspace ? workspace->data() : nullptr;
  run_options.workspace_bytes = *workspace_bytes;
  if (auto ran = op->run(direction, args, run_options); !ran) return ran;
  if (auto synchronized = stream->synchronize(); !synchronized) return synchronized;

  for (auto& [name, host] : outputs) {
    if (auto copied = buffers.at(name).copy_to_host(host.bytes); !copied) {
      return std::unexpected(copied.error().with_context("argument '" + name + "'"));
    }
  }
  const SafetensorsMetadata metadata = {{"key", spec.key},
                                        {"device", to_string(*device)},
                                        {"dtype", std::string(to_string(*dtype))},
                                        {"direction", std::string(to_string(direction))},
                                        {"spec_sha256", spec.sha256},
                                        {"implementation", op->implementation()}};
  if (auto written = write_safetensors(options.out, outputs, metadata); !written) return written;
  for (const auto& [name, host] : outputs) {
    std::cout << "wrote " << name << " " << shape_text(host.shape) << " " << to_string(host.dtype) << " to " << options.out << '\n';
  }
  return {};
}

}  // namespace

void add_run_command(CLI::App& program, Command& selected) {
  auto options = std::make_shared<RunCommandOptions>();
  CLI::App* command = program.add_subcommand(
      "run", "Run KEY once on a device: inputs from a safetensors file (named as the spec's arguments), "
             "outputs to another with metadata naming the implementation");
  command->add_option("KEY", options->key, "operator key, e.g. qwenimage_adaln_mod_projection")->required();
  command->add_option("--device", options->device, "cpu, cuda:N, ...")->required();
  command->add_option("--dtype", options->dtype, "execution dtype: fp32 or bf16; every input must already have it")->required();
  command->add_option("--inputs", options->inputs, "safetensors file of the direction's inputs (see make-inputs)")->required();
  command->add_option("--out", options->out, "safetensors file to write the outputs to")->required();
  command->add_flag("--backward", options->backward, "run the backward direction (default: forward)");
  command->add_flag("--seed-missing", options->seed_missing,
                    "draw inputs absent from --inputs from the spec's conformance distributions instead of refusing");
  command->add_option("--seed", options->seed, "seed for --seed-missing")->capture_default_str();
  command->callback([&selected, options] {
    selected = [options](Registry& registry) { return run(registry, *options); };
  });
}

}  // namespace rlk::cli
