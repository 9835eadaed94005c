// rlk: list, explain and run the operators of the spec path. Every failure ends the program
// with a non-zero status and exactly one line "rlk: error: <reason>" on stderr.
#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "conform_command.hpp"
#ifdef RLK_WITH_BENCH
#include "bench_command.hpp"
#endif

namespace rlk::cli {

Result<void> check_spec_dtype(const OpSpec& spec, DType dtype) {
  if (spec.numeric(dtype) != nullptr) return {};
  std::string allowed;
  for (DType d : spec.dtypes()) allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(d));
  return fail(ErrorCode::invalid_argument,
              "--dtype " + std::string(to_string(dtype)) + ": " + spec.key + " has no numeric contract for it (allowed: " + allowed + ")");
}

}  // namespace rlk::cli

namespace {

int report(const std::string& reason) {
  std::string line = reason;
  std::ranges::replace(line, '\n', ' ');
  std::cerr << "rlk: error: " << line << '\n';
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App program{"rl-kernel: list, explain and run batch-invariant operators", "rlk"};
  program.require_subcommand(1);
  rlk::cli::Command selected;
  rlk::cli::add_list_command(program, selected);
  rlk::cli::add_explain_command(program, selected);
  rlk::cli::add_make_inputs_command(program, selected);
  rlk::cli::add_run_command(program, selected);
  rlk::cli::add_conform_command(program, selected);
#ifdef RLK_WITH_BENCH
  rlk::bench::add_bench_command(program, selected);
#endif
  try {
    program.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError with exit code 0; CLI11 prints the selected subcommand's help.
    if (e.get_exit_code() == 0) return program.exit(e);
    report(e.what());
    return e.get_exit_code();
  }

  auto registry = rlk::Registry::open();
  if (!registry) return report(registry.error().with_context("opening the registry").to_string());
  if (auto done = selected(**registry); !done) return report(done.error().to_string());
  return 0;
}
