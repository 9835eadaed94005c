// Gate 3, full workload: the spec's workload_rows run as one batch and in each chunking
// (chunk sizes repeat in order until the rows are covered; the last chunk is cut to fit)
// give identical per-row bytes.
#include <numeric>

#include "compare.hpp"
#include "plan.hpp"

namespace rlk::conform {
namespace {

std::vector<std::int64_t> chunks_of(const std::vector<std::int64_t>& sizes, std::int64_t rows) {
  std::vector<std::int64_t> chunks;
  for (std::int64_t covered = 0, i = 0; covered < rows; ++i) {
    const std::int64_t size = std::min(sizes[static_cast<std::size_t>(i) % sizes.size()], rows - covered);
    chunks.push_back(size);
    covered += size;
  }
  return chunks;
}

std::string chunking_name(const std::vector<std::int64_t>& sizes) {
  std::string name;
  for (std::int64_t size : sizes) {
    if (!name.empty()) name += '+';
    name += std::to_string(size);
  }
  return name;
}

}  // namespace

std::vector<Case> plan_workload(const PlanContext& context) {
  std::vector<Case> cases;
  const GateSizes& sizes = context.sizes;
  if (sizes.workload_rows < 1 || sizes.seeds.empty()) return cases;
  const std::uint64_t seed = sizes.seeds.front();
  const std::int64_t rows = sizes.workload_rows;
  for (DType dtype : context.dtypes) {
    for (const DirectionLayout& d : context.layout->directions) {
      if (d.per_row_outputs.empty()) continue;
      const Direction direction = d.direction;
      for (const auto& chunking : sizes.workload_chunkings) {
        Case c;
        c.gate = "workload";
        c.id = "workload/" + dtype_name(dtype) + "/seed=" + std::to_string(seed) + "/rows=" + std::to_string(rows) +
               "/chunks=" + chunking_name(chunking) + "/" + std::string(to_string(direction));
        c.dtype = dtype;
        c.seed = seed;
        c.run = [c, seed, rows, chunking, direction](Workbench& bench) -> std::vector<Record> {
          const auto names = bench.layout().find(direction)->per_row_output_names();
          auto whole = bench.first_rows_per_row_outputs(seed, c.dtype, direction, rows);
          if (!whole) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), whole.error())};
          std::map<std::string, std::int64_t> differing;
          std::map<std::string, std::string> first;
          const auto chunks = chunks_of(chunking, rows);
          std::int64_t offset = 0;
          for (std::int64_t size : chunks) {
            std::vector<std::int64_t> chunk_rows(static_cast<std::size_t>(size));
            std::iota(chunk_rows.begin(), chunk_rows.end(), offset);
            Result<HostOutputs> part = [&]() -> Result<HostOutputs> {
              if (size == 1) {
                auto alone = bench.alone(seed, c.dtype, direction, offset);
                if (!alone) return std::unexpected(alone.error());
                return **alone;
              }
              auto inputs = bench.inputs(seed, c.dtype, direction, chunk_rows);
              if (!inputs) return std::unexpected(inputs.error());
              return bench.executor().run(direction, *inputs, names);
            }();
            if (!part) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), part.error())};
            for (const std::string& name : names) {
              for (std::int64_t i = 0; i < size; ++i) {
                const auto diff = compare_bytes(row_of(part->at(name), i), row_of((*whole)->at(name), offset + i), part->at(name).dtype);
                if (diff.equal()) continue;
                if (differing[name]++ == 0) {
                  first[name] = "row " + std::to_string(offset + i) + " (chunk of " + std::to_string(size) + " at " +
                                std::to_string(offset) + "), element " + std::to_string(diff.element) + ": " + diff.got +
                                " vs " + diff.want + " in the whole run";
                }
              }
            }
            offset += size;
          }
          std::vector<Record> records;
          for (const std::string& name : names) {
            const std::int64_t n = differing[name];
            const std::string what = std::to_string(chunks.size()) + " chunks (" + chunking_name(chunking) + ") vs " +
                                     std::to_string(rows) + " rows whole: ";
            records.push_back(make_record(c, name, "bytes", n > 0 ? Status::failed : Status::passed,
                                          what + (n > 0 ? std::to_string(n) + " rows differ; first " + first[name]
                                                        : "every row byte-identical"),
                                          {{"rows", rows}, {"chunks", chunks.size()}, {"rows_differing", n}}));
          }
          return records;
        };
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

}  // namespace rlk::conform
