#include "conform_command.hpp"

#include <memory>

#include "runner.hpp"

namespace rlk::cli {

void add_conform_command(CLI::App& program, Command& selected) {
  auto o = std::make_shared<conform::ConformOptions>();
  CLI::App* command = program.add_subcommand(
      "conform", "Run KEY's conformance gates (its spec's conformance section) on a device; writes acceptance.json and SUMMARY.md");
  command->add_option("KEY", o->key, "operator key, e.g. qwenimage_adaln_mod_projection")->required();
  command->add_option("--device", o->device, "cpu or cuda:N")->capture_default_str();
  command->add_option("--dtype", o->dtype, "fp32 or bf16 (default: every dtype of the spec)");
  command->add_option("--out", o->out, "report directory (default: rlk-conform-KEY-DEVICE)");
  command->add_flag("--quick", o->quick, "a small subset of every gate (seconds on a CPU)");
  command->add_option("--weights", o->weights, "safetensors checkpoint whose tensor replaces a synthetic input in accuracy gates");
  command->add_option("--tensor", o->tensor, "tensor name in --weights, e.g. transformer_blocks.0.img_mod.1.weight");
  command->add_option("--only", o->only, "run only this gate (repeatable)")->allow_extra_args(false);
  command->add_option("--seed", o->seed, "run only the cases of this seed");
  command->add_option("--batch", o->batch, "run only the cases of this batch size");
  command->add_option("--case", o->case_id, "run only this case (the repro lines name it)");
  command->add_flag("--print-output-sha256", o->print_output_sha256)->group("");
  command->add_option("--pool-rows", o->pool_rows)->group("");
  command->callback([&selected, o] {
    selected = [o](Registry& registry) { return conform::run_conform(registry, *o); };
  });
}

}  // namespace rlk::cli
