// The rlk program's subcommands. Each add_*_command adds one subcommand and its options to
// the program; when that subcommand is the one parsed, `selected` receives its work, which
// main runs against the registry opened with default options.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "rlk/registry.hpp"
#include "rlk/safetensors.hpp"

namespace rlk::cli {

using Command = std::function<Result<void>(Registry&)>;

void add_list_command(CLI::App& program, Command& selected);
void add_explain_command(CLI::App& program, Command& selected);
void add_make_inputs_command(CLI::App& program, Command& selected);
void add_run_command(CLI::App& program, Command& selected);

// Symbol name -> extent, e.g. {"B", 2}.
using SymbolBindings = std::map<std::string, std::int64_t>;

// The spec of `key`, or the registry's unknown-key error, which names the nearest keys.
Result<const OpSpec*> find_spec(Registry& registry, std::string_view key);
// Refuses a dtype the spec has no numeric contract for, listing the ones it has.
Result<void> check_spec_dtype(const OpSpec& spec, DType dtype);
Result<std::vector<std::int64_t>> bind_shape(const ArgumentSpec& argument, const SymbolBindings& symbols);
// Synthetic values for one input argument, drawn from the spec's conformance.inputs
// distribution and rounded once to `dtype`. Each argument has its own generator seeded from
// (seed, its position in the spec), so its values do not depend on which others are drawn.
Result<HostTensor> draw_input(const OpSpec& spec, const ArgumentSpec& argument, DType dtype,
                              const SymbolBindings& symbols, std::uint64_t seed);

}  // namespace rlk::cli
