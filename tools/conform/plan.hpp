// A run is a plan of cases; each case belongs to one gate, runs on the shared Workbench and
// yields one record per output it judges. Planning reads every size from the spec's
// conformance section (capped in --quick mode, as docs/conformance.md lists).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record.hpp"
#include "workbench.hpp"

namespace rlk::conform {

struct GateSizes {
  std::vector<std::uint64_t> seeds;
  std::vector<std::int64_t> accuracy_batches;
  std::vector<std::int64_t> invariance_batches;
  std::vector<std::pair<std::int64_t, std::int64_t>> boundary_sweeps;
  std::int64_t workload_rows = 0;
  std::vector<std::vector<std::int64_t>> workload_chunkings;
  std::vector<std::int64_t> padding_batches;
  // Tried in order until the negative control is caught: the invariance batches, the first
  // sweep and, in --quick mode, the spec's first invariance batch (a GPU library can pick
  // the same kernel for every tiny batch).
  std::vector<std::int64_t> negative_control_batches;

  static GateSizes of(const ConformanceSpec& conformance, bool quick);
  // The rows each seed's inputs are drawn with: enough for every gate's batches.
  std::int64_t pool_rows() const;
};

struct Case {
  std::string gate;
  std::string id;
  DType dtype = DType::float32;
  std::optional<std::uint64_t> seed;
  std::optional<std::int64_t> batch;
  std::function<std::vector<Record>(Workbench&)> run;
};

// A case of `gate` for one (dtype, seed, batch), its id "gate/dtype/seed=S/B=N/tail"; the
// caller sets `run`.
Case batch_case(std::string gate, DType dtype, std::uint64_t seed, std::int64_t batch, std::string_view tail);

// What planning knows besides the spec: the device, the dtypes asked for, and how to rerun
// this process for the determinism gate.
struct PlanContext {
  const OpSpec* spec = nullptr;
  const OperatorLayout* layout = nullptr;
  GateSizes sizes;
  std::vector<DType> dtypes;
  Device device;
  bool quick = false;
  std::string implementation;  // "reference" or the plugin's file
  std::string build_info;      // the plugin's build description, if any
  std::string fingerprint;     // architecture, driver, runtime and build: what output hashes are keyed by
  // argv of `rlk conform KEY --device D`, to which the determinism gate appends its flags.
  std::vector<std::string> self_command;
};

std::vector<Case> plan_accuracy(const PlanContext& context);
std::vector<Case> plan_batch_invariance(const PlanContext& context);
std::vector<Case> plan_workload(const PlanContext& context);
std::vector<Case> plan_repeat_and_padding(const PlanContext& context);
std::vector<Case> plan_cancellation(const PlanContext& context);
std::vector<Case> plan_strict_math(const PlanContext& context);
std::vector<Case> plan_row_isolation(const PlanContext& context);
std::vector<Case> plan_determinism(const PlanContext& context);
std::vector<Case> plan_negative_control(const PlanContext& context);

// The planner of a gate named in a spec's `gates:` list, or null.
using GatePlanner = std::vector<Case> (*)(const PlanContext&);
GatePlanner find_gate(std::string_view name);

// Shared by the gate files.
std::string dtype_name(DType dtype);
Record make_record(const Case& c, std::string output, std::string check, Status status, std::string detail,
                   nlohmann::json numbers = nlohmann::json::object());
// The per-row outputs of `rows` positions of `batch` compared to each pool row run alone:
// one record per per-row output.
std::vector<Record> compare_rows_to_alone(const Case& c, Workbench& bench, std::uint64_t seed, Direction direction,
                                          const HostOutputs& batch, std::span<const std::int64_t> pool_rows,
                                          const std::string& what);

// One accuracy record: failed when any element is outside the tolerance, mistrusted when the
// reference is mostly zeros, passed otherwise.
Record judge_accuracy(const Case& c, const std::string& output, const HostTensor& got, const HostTensor& reference,
                      Tolerance tolerance, std::string check);

}  // namespace rlk::conform
