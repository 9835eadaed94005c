// Gate 4, repeat and zero padding: the same call twice gives the same bytes in every output;
// the batch padded with rows of zeros in every per-row input gives the same bytes in the real
// rows' per-row outputs and in the batch-reduced outputs (zero rows contribute exact zeros to
// a sum of per-row products, and adding +0 leaves a compensated sum unchanged).
#include <numeric>

#include "compare.hpp"
#include "plan.hpp"

namespace rlk::conform {
namespace {

// Compares `got` against `want` output by output; per-row outputs on their first `rows`
// rows only (the padded call has more).
void compare_outputs(const Case& c, const DirectionLayout& d, const HostOutputs& got, const HostOutputs& want,
                     std::int64_t rows, const std::string& what, std::vector<Record>& records) {
  for (const ArgumentSpec* output : d.outputs()) {
    const bool per_row = std::ranges::find(d.per_row_outputs, output) != d.per_row_outputs.end();
    const HostTensor& a = got.at(output->name);
    const HostTensor& b = want.at(output->name);
    const std::size_t bytes = per_row ? row_bytes(a) * static_cast<std::size_t>(rows) : a.bytes.size();
    const auto diff = compare_bytes(std::span(a.bytes).first(std::min(bytes, a.bytes.size())),
                                    std::span(b.bytes).first(std::min(bytes, b.bytes.size())), a.dtype);
    std::string detail = what + ": " + output->name + (per_row ? " (real rows)" : " (batch-reduced)");
    nlohmann::json numbers = {{"rows", rows}, {"per_row", per_row}};
    if (!diff.equal()) {
      detail += " differs at element " + std::to_string(diff.element) + ": " + diff.got + " vs " + diff.want;
      numbers["first_difference"] = {{"element", diff.element}, {"got", diff.got}, {"want", diff.want}};
    } else {
      detail += " byte-identical";
    }
    records.push_back(make_record(c, output->name, what.substr(0, what.find(' ')), diff.equal() ? Status::passed : Status::failed,
                                  detail, numbers));
  }
}

}  // namespace

std::vector<Case> plan_repeat_and_padding(const PlanContext& context) {
  std::vector<Case> cases;
  if (context.sizes.seeds.empty()) return cases;
  const std::uint64_t seed = context.sizes.seeds.front();
  for (DType dtype : context.dtypes) {
    for (const DirectionLayout& d : context.layout->directions) {
      const Direction direction = d.direction;
      for (std::int64_t batch : context.sizes.padding_batches) {
        Case c = batch_case("repeat_and_padding", dtype, seed, batch, to_string(direction));
        c.run = [c, seed, batch, direction](Workbench& bench) -> std::vector<Record> {
          const DirectionLayout& layout = *bench.layout().find(direction);
          auto error = [&](const Error& e) { return std::vector<Record>{record_of_error(c.gate, c.id, dtype_name(c.dtype), e)}; };
          auto inputs = bench.first_rows(seed, c.dtype, direction, batch);
          if (!inputs) return error(inputs.error());
          auto first = bench.executor().run(direction, *inputs);
          if (!first) return error(first.error());
          auto second = bench.executor().run(direction, *inputs);
          if (!second) return error(second.error());
          std::vector<Record> records;
          compare_outputs(c, layout, *second, *first, batch, "repeat of B=" + std::to_string(batch), records);
          for (std::int64_t padding : {std::int64_t{1}, batch}) {
            std::vector<std::int64_t> rows(static_cast<std::size_t>(batch + padding), -1);
            std::iota(rows.begin(), rows.begin() + batch, 0);
            auto padded_inputs = bench.inputs(seed, c.dtype, direction, rows);
            if (!padded_inputs) return error(padded_inputs.error());
            auto padded = bench.executor().run(direction, *padded_inputs);
            if (!padded) return error(padded.error());
            compare_outputs(c, layout, *padded, *first, batch,
                            "padding of B=" + std::to_string(batch) + " with " + std::to_string(padding) + " zero rows", records);
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
