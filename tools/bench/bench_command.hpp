// `rlk bench`: rl-kernel against the cuBLAS baseline, interleaved in one process, with the
// physical floor of each case measured in the same run. Method: docs/performance.md.
#pragma once

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace rlk::bench {

void add_bench_command(CLI::App& program, cli::Command& selected);

}  // namespace rlk::bench
