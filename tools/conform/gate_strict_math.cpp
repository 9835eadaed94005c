// Gate 6, strict math. The probe: a plugin operator exists only when the plugin's device
// probe passed (the registry runs it in get_op), so the record states that and the plugin's
// build description. The precision sentinel: float32 outputs on well-conditioned data must
// match the FP64 oracle to 2^-16 of the output's largest magnitude. Honest float32 stays near
// 2^-20 there; TF32 inputs (10-bit mantissas) give about 2^-11, bfloat16 about 2^-8, so a
// silent lower-precision path cannot pass.
#include <cmath>
#include <cstdio>

#include "compare.hpp"
#include "plan.hpp"

namespace rlk::conform {
namespace {

constexpr double kSentinelBound = 1.0 / 65536;  // 2^-16
// The sentinel needs a batch wide enough that a tensor-core path would be chosen.
constexpr std::int64_t kSentinelMaxBatch = 256;

}  // namespace

std::vector<Case> plan_strict_math(const PlanContext& context) {
  std::vector<Case> cases;
  Case probe;
  probe.gate = "strict_math";
  probe.id = "strict_math/probe";
  probe.dtype = context.dtypes.empty() ? DType::float32 : context.dtypes.front();
  const bool is_plugin = context.implementation != "reference";
  const std::string build_info = context.build_info;
  const std::string device = to_string(context.device);
  probe.run = [probe, is_plugin, build_info, device](Workbench&) {
    if (!is_plugin) {
      return std::vector<Record>{make_record(probe, "", "probe", Status::skipped,
                                             "the CPU reference has no device probe (built -ffp-contract=off, no fast-math)")};
    }
    return std::vector<Record>{make_record(probe, "", "probe", Status::passed,
                                           "the plugin's probe passed on " + device + " (get_op refuses otherwise); build: " +
                                               build_info,
                                           {{"build_info", build_info}})};
  };
  cases.push_back(probe);

  if (std::ranges::find(context.dtypes, DType::float32) == context.dtypes.end() || context.sizes.seeds.empty()) return cases;
  std::int64_t batch = 1;
  for (std::int64_t b : context.sizes.accuracy_batches) {
    if (b <= kSentinelMaxBatch) batch = std::max(batch, b);
  }
  const std::uint64_t seed = context.sizes.seeds.front();
  for (const DirectionLayout& d : context.layout->directions) {
    Case c;
    c.gate = "strict_math";
    c.id = "strict_math/float32/sentinel/seed=" + std::to_string(seed) + "/B=" + std::to_string(batch) + "/" +
           std::string(to_string(d.direction));
    c.dtype = DType::float32;
    c.seed = seed;
    c.batch = batch;
    const Direction direction = d.direction;
    c.run = [c, seed, batch, direction](Workbench& bench) -> std::vector<Record> {
      auto error = [&](const Error& e) { return std::vector<Record>{record_of_error(c.gate, c.id, dtype_name(c.dtype), e)}; };
      auto inputs = bench.first_rows(seed, c.dtype, direction, batch);
      if (!inputs) return error(inputs.error());
      auto judged = bench.run_with_oracle(direction, c.dtype, *inputs);
      if (!judged) return error(judged.error());
      std::vector<Record> records;
      for (const auto& [name, values] : judged->got) {
        const double e = normalized_error(values, judged->oracle.at(name));
        char detail[200];
        std::snprintf(detail, sizeof detail, "max |x - oracle| / max |oracle| = %.3g (2^%.1f); bound 2^-16", e,
                      e > 0 ? std::log2(e) : -INFINITY);
        records.push_back(make_record(c, name, "precision_sentinel", e <= kSentinelBound ? Status::passed : Status::failed, detail,
                                      {{"normalized_error", e}, {"bound", kSentinelBound}}));
      }
      return records;
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace rlk::conform
