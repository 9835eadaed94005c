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

#include "common/synthetic_inputs.hpp"
#include "rlk/registry.hpp"
#include "rlk/safetensors.hpp"

namespace rlk::cli {

using tools::bind_shape;
using tools::draw_input;
using tools::SymbolBindings;

using Command = std::function<Result<void>(Registry&)>;

void add_list_command(CLI::App& program, Command& selected);
void add_explain_command(CLI::App& program, Command& selected);
void add_make_inputs_command(CLI::App& program, Command& selected);
void add_run_command(CLI::App& program, Command& selected);

// Refuses a dtype the spec has no numeric contract for, listing the ones it has.
Result<void> check_spec_dtype(const OpSpec& spec, DType dtype);

}  // namespace rlk::cli
