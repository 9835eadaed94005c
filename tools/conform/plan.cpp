#include "plan.hpp"

#include <algorithm>
#include <cmath>

#include "compare.hpp"

namespace rlk::conform {
namespace {

// --quick caps (docs/conformance.md): batches of at most 4 rows, one invariance batch of at
// most 5, the first sweep cut to 5 batch sizes, a workload of 4 rows with the spec's
// chunkings scaled down, the first seed.
constexpr std::int64_t kQuickAccuracyBatch = 4;
constexpr std::int64_t kQuickInvarianceBatch = 5;
constexpr std::int64_t kQuickSweepLength = 5;
constexpr std::int64_t kQuickWorkloadRows = 4;

std::vector<std::int64_t> at_most(const std::vector<std::int64_t>& batches, std::int64_t cap) {
  std::vector<std::int64_t> kept;
  for (std::int64_t b : batches) {
    if (b <= cap) kept.push_back(b);
  }
  if (kept.empty() && !batches.empty()) kept.push_back(std::min(cap, *std::ranges::min_element(batches)));
  return kept;
}

}  // namespace

GateSizes GateSizes::of(const ConformanceSpec& c, bool quick) {
  GateSizes s;
  s.seeds = c.seeds;
  s.accuracy_batches = c.accuracy_batches;
  s.invariance_batches = c.invariance_batches;
  s.boundary_sweeps = c.boundary_sweeps;
  s.workload_rows = c.workload_rows;
  s.workload_chunkings = c.workload_chunkings;
  s.padding_batches = c.padding_batches;
  const auto negative_control_batches = [&s] {
    std::vector<std::int64_t> batches = s.invariance_batches;
    if (!s.boundary_sweeps.empty()) {
      for (std::int64_t b = s.boundary_sweeps.front().first; b <= s.boundary_sweeps.front().second; ++b) batches.push_back(b);
    }
    return batches;
  };
  if (!quick) {
    s.negative_control_batches = negative_control_batches();
    return s;
  }
  if (s.seeds.size() > 1) s.seeds.erase(s.seeds.begin() + 1, s.seeds.end());
  s.accuracy_batches = at_most(s.accuracy_batches, kQuickAccuracyBatch);
  s.padding_batches = at_most(s.padding_batches, kQuickAccuracyBatch);
  s.invariance_batches = at_most(s.invariance_batches, kQuickInvarianceBatch);
  if (s.invariance_batches.size() > 1) s.invariance_batches.erase(s.invariance_batches.begin() + 1, s.invariance_batches.end());
  if (!s.boundary_sweeps.empty()) {
    auto [first, last] = s.boundary_sweeps.front();
    s.boundary_sweeps = {{first, std::min(last, first + kQuickSweepLength - 1)}};
  }
  if (s.workload_rows > kQuickWorkloadRows) {
    std::vector<std::vector<std::int64_t>> scaled;
    for (const auto& chunking : s.workload_chunkings) {
      std::vector<std::int64_t> sizes;
      for (std::int64_t size : chunking) {
        const double share = static_cast<double>(size) * kQuickWorkloadRows / static_cast<double>(s.workload_rows);
        sizes.push_back(std::max<std::int64_t>(1, std::llround(share)));
      }
      if (std::ranges::find(scaled, sizes) == scaled.end()) scaled.push_back(std::move(sizes));
    }
    s.workload_rows = kQuickWorkloadRows;
    s.workload_chunkings = std::move(scaled);
  }
  s.negative_control_batches = negative_control_batches();
  if (!c.invariance_batches.empty()) s.negative_control_batches.push_back(c.invariance_batches.front());
  return s;
}

std::int64_t GateSizes::pool_rows() const {
  std::int64_t rows = 1;
  for (std::int64_t b : accuracy_batches) rows = std::max(rows, b);
  for (std::int64_t b : invariance_batches) rows = std::max(rows, b);
  for (std::int64_t b : padding_batches) rows = std::max(rows, b);
  for (const auto& sweep : boundary_sweeps) rows = std::max(rows, sweep.second);
  for (std::int64_t b : negative_control_batches) rows = std::max(rows, b);
  return std::max(rows, workload_rows);
}

GatePlanner find_gate(std::string_view name) {
  static const std::pair<std::string_view, GatePlanner> kGates[] = {
      {"accuracy", plan_accuracy},
      {"batch_invariance", plan_batch_invariance},
      {"workload", plan_workload},
      {"repeat_and_padding", plan_repeat_and_padding},
      {"cancellation", plan_cancellation},
      {"strict_math", plan_strict_math},
      {"row_isolation", plan_row_isolation},
      {"determinism", plan_determinism},
      {"negative_control", plan_negative_control},
  };
  for (const auto& [gate, planner] : kGates) {
    if (gate == name) return planner;
  }
  return nullptr;
}

std::string dtype_name(DType dtype) { return std::string(to_string(dtype)); }

Record make_record(const Case& c, std::string output, std::string check, Status status, std::string detail,
                   nlohmann::json numbers) {
  Record r;
  r.gate = c.gate;
  r.case_id = c.id;
  r.dtype = dtype_name(c.dtype);
  r.output = std::move(output);
  r.check = std::move(check);
  r.status = status;
  r.detail = std::move(detail);
  r.numbers = std::move(numbers);
  return r;
}

std::vector<Record> compare_rows_to_alone(const Case& c, Workbench& bench, std::uint64_t seed, Direction direction,
                                          const HostOutputs& batch, std::span<const std::int64_t> pool_rows,
                                          const std::string& what) {
  std::vector<Record> records;
  const DirectionLayout* d = bench.layout().find(direction);
  for (const ArgumentSpec* output : d->per_row_outputs) {
    const HostTensor& got = batch.at(output->name);
    std::int64_t compared = 0;
    std::int64_t differing = 0;
    nlohmann::json first;
    for (std::size_t i = 0; i < pool_rows.size(); ++i) {
      if (pool_rows[i] < 0) continue;
      auto alone = bench.alone(seed, c.dtype, direction, pool_rows[i]);
      if (!alone) {
        auto r = record_of_error(c.gate, c.id, dtype_name(c.dtype), alone.error());
        r.output = output->name;
        r.check = "bytes";
        records.push_back(std::move(r));
        return records;
      }
      ++compared;
      const auto diff = compare_bytes(row_of(got, static_cast<std::int64_t>(i)), row_of((*alone)->at(output->name), 0), got.dtype);
      if (diff.equal()) continue;
      if (differing++ == 0) {
        first = {{"position", i}, {"pool_row", pool_rows[i]}, {"element", diff.element}, {"got", diff.got}, {"want", diff.want}};
      }
    }
    nlohmann::json numbers = {{"rows_compared", compared}, {"rows_differing", differing}};
    std::string detail = what + ": " + std::to_string(compared) + " rows of " + output->name + " byte-identical to each row alone";
    if (differing > 0) {
      numbers["first_difference"] = first;
      detail = what + ": " + std::to_string(differing) + " of " + std::to_string(compared) + " rows of " + output->name +
               " differ from the row alone; first at position " + first["position"].dump() + " (pool row " +
               first["pool_row"].dump() + "), element " + first["element"].dump() + ": " + first["got"].get<std::string>() +
               " vs " + first["want"].get<std::string>();
    }
    records.push_back(make_record(c, output->name, "bytes", differing > 0 ? Status::failed : Status::passed, detail, numbers));
  }
  return records;
}

Case batch_case(std::string gate, DType dtype, std::uint64_t seed, std::int64_t batch, std::string_view tail) {
  Case c;
  c.id = gate + "/" + dtype_name(dtype) + "/seed=" + std::to_string(seed) + "/B=" + std::to_string(batch) + "/" + std::string(tail);
  c.gate = std::move(gate);
  c.dtype = dtype;
  c.seed = seed;
  c.batch = batch;
  return c;
}

}  // namespace rlk::conform
