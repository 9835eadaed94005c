// Gate 2, batch invariance in raw bytes: each row's per-row outputs inside a batch equal the
// row run alone, for every invariance batch and seed, across the boundary sweeps, with a row
// moved to other positions and with the batch reversed.
#include <algorithm>
#include <numeric>

#include "plan.hpp"

namespace rlk::conform {
namespace {

// Runs the pool rows `rows` as one batch and compares each row to that row alone.
std::vector<Record> rows_versus_alone(const Case& c, Workbench& bench, std::uint64_t seed, Direction direction,
                                      const std::vector<std::int64_t>& rows, const std::string& what) {
  auto inputs = bench.inputs(seed, c.dtype, direction, rows);
  if (!inputs) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), inputs.error())};
  auto batch = bench.executor().run(direction, *inputs, bench.layout().find(direction)->per_row_output_names());
  if (!batch) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), batch.error())};
  return compare_rows_to_alone(c, bench, seed, direction, *batch, rows, what);
}

std::vector<std::int64_t> iota_rows(std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

// Folds the records of several batches into one per output: failed if any batch failed,
// with the first failing batch's detail.
std::vector<Record> fold(std::vector<std::vector<Record>> per_batch, const std::string& what) {
  std::vector<Record> folded;
  for (auto& records : per_batch) {
    for (Record& r : records) {
      auto same = std::ranges::find(folded, r.output, &Record::output);
      if (same == folded.end()) {
        r.detail = what + "; " + r.detail;
        folded.push_back(std::move(r));
      } else if (same->status == Status::passed && r.status != Status::passed) {
        r.detail = what + "; " + r.detail;
        *same = std::move(r);
      }
    }
  }
  return folded;
}

}  // namespace

std::vector<Case> plan_batch_invariance(const PlanContext& context) {
  std::vector<Case> cases;
  const GateSizes& sizes = context.sizes;
  for (DType dtype : context.dtypes) {
    for (const DirectionLayout& d : context.layout->directions) {
      if (d.per_row_outputs.empty()) continue;
      const Direction direction = d.direction;
      const std::string suffix = "/" + std::string(to_string(direction));
      auto add = [&](std::string id, std::uint64_t seed, std::optional<std::int64_t> batch, auto body) {
        Case c;
        c.gate = "batch_invariance";
        c.id = "batch_invariance/" + dtype_name(dtype) + "/" + id + suffix;
        c.dtype = dtype;
        c.seed = seed;
        c.batch = batch;
        c.run = [c, body](Workbench& bench) { return body(c, bench); };
        cases.push_back(std::move(c));
      };
      for (std::uint64_t seed : sizes.seeds) {
        for (std::int64_t batch : sizes.invariance_batches) {
          add("seed=" + std::to_string(seed) + "/B=" + std::to_string(batch), seed, batch,
              [=](const Case& c, Workbench& bench) {
                return rows_versus_alone(c, bench, seed, direction, iota_rows(batch), "B=" + std::to_string(batch));
              });
        }
      }
      if (sizes.seeds.empty()) continue;
      const std::uint64_t seed = sizes.seeds.front();
      for (const auto& [first, last] : sizes.boundary_sweeps) {
        add("seed=" + std::to_string(seed) + "/sweep=" + std::to_string(first) + ".." + std::to_string(last), seed, std::nullopt,
            [=](const Case& c, Workbench& bench) {
              std::vector<std::vector<Record>> per_batch;
              for (std::int64_t batch = first; batch <= last; ++batch) {
                per_batch.push_back(rows_versus_alone(c, bench, seed, direction, iota_rows(batch), "B=" + std::to_string(batch)));
              }
              return fold(std::move(per_batch), "sweep B=" + std::to_string(first) + ".." + std::to_string(last));
            });
      }
      for (std::int64_t batch : sizes.invariance_batches) {
        if (batch < 2) continue;
        std::vector<std::int64_t> positions = {1, batch / 2, batch - 1};
        if (context.quick) positions = {batch / 2};
        std::ranges::sort(positions);
        positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
        for (std::int64_t position : positions) {
          add("seed=" + std::to_string(seed) + "/B=" + std::to_string(batch) + "/moved_to=" + std::to_string(position), seed, batch,
              [=](const Case& c, Workbench& bench) {
                // Row 0 moved to `position`; the rows before it shift up by one.
                std::vector<std::int64_t> rows = iota_rows(batch);
                std::rotate(rows.begin(), rows.begin() + 1, rows.begin() + position + 1);
                return rows_versus_alone(c, bench, seed, direction, rows,
                                         "B=" + std::to_string(batch) + ", row 0 at position " + std::to_string(position));
              });
        }
        add("seed=" + std::to_string(seed) + "/B=" + std::to_string(batch) + "/reversed", seed, batch,
            [=](const Case& c, Workbench& bench) {
              std::vector<std::int64_t> rows = iota_rows(batch);
              std::ranges::reverse(rows);
              return rows_versus_alone(c, bench, seed, direction, rows, "B=" + std::to_string(batch) + " reversed");
            });
      }
    }
  }
  return cases;
}

}  // namespace rlk::conform
