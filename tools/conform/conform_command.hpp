// Registers `rlk conform` (docs/conformance.md) on the rlk program.
#pragma once

#include "rlk/commands.hpp"

namespace rlk::cli {

void add_conform_command(CLI::App& program, Command& selected);

}  // namespace rlk::cli
