#include "runner.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <exception>
#include <iostream>

#include "determinism.hpp"
#include "environment.hpp"
#include "plan.hpp"
#include "progress.hpp"
#include "report.hpp"

namespace rlk::conform {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string base_command(const ConformOptions& o) {
  std::string command = "rlk conform " + o.key + " --device " + o.device;
  if (!o.dtype.empty()) command += " --dtype " + o.dtype;
  if (o.quick) command += " --quick";
  if (!o.weights.empty()) command += " --weights " + o.weights + " --tensor " + o.tensor;
  return command;
}

std::string full_command(const ConformOptions& o) {
  std::string command = base_command(o);
  if (!o.out.empty()) command += " --out " + o.out;
  for (const std::string& gate : o.only) command += " --only " + gate;
  if (o.seed) command += " --seed " + std::to_string(*o.seed);
  if (o.batch) command += " --batch " + std::to_string(*o.batch);
  if (!o.case_id.empty()) command += " --case " + o.case_id;
  return command;
}

Result<std::vector<DType>> dtypes_of(const OpSpec& spec, const std::string& text) {
  if (text.empty()) return spec.dtypes();
  auto dtype = parse_dtype(text);
  if (!dtype) return std::unexpected(dtype.error().with_context("--dtype"));
  if (spec.numeric(*dtype) == nullptr) {
    return fail(ErrorCode::invalid_argument, "--dtype " + text + ": " + spec.key + " has no numeric contract for it");
  }
  return std::vector<DType>{*dtype};
}

Result<std::optional<Checkpoint>> load_checkpoint(const OpSpec& spec, const OperatorLayout& layout, const ConformOptions& o) {
  if (o.weights.empty() && o.tensor.empty()) return std::optional<Checkpoint>{};
  if (o.weights.empty() || o.tensor.empty()) return fail(ErrorCode::invalid_argument, "--weights and --tensor go together");
  auto tensor = read_safetensors_tensor(o.weights, o.tensor);
  if (!tensor) return std::unexpected(tensor.error().with_context("--weights " + o.weights + " --tensor " + o.tensor));
  std::vector<std::string> matching;
  for (const DirectionLayout& d : layout.directions) {
    for (const ArgumentSpec* argument : d.shared_inputs) {
      if (bind_batch(*argument, 0) == tensor->shape && std::ranges::find(matching, argument->name) == matching.end()) {
        matching.push_back(argument->name);
      }
    }
  }
  if (matching.size() != 1) {
    return fail(ErrorCode::invalid_argument, "--tensor " + o.tensor + ": " + std::to_string(matching.size()) +
                                                 " shared inputs of " + spec.key + " have its shape; exactly one must");
  }
  return std::optional<Checkpoint>(Checkpoint{o.weights, o.tensor, matching.front(), std::move(*tensor)});
}

bool selected(const Case& c, const ConformOptions& o) {
  if (!o.only.empty() && std::ranges::find(o.only, c.gate) == o.only.end()) return false;
  if (o.seed && c.seed != o.seed) return false;
  if (o.batch && c.batch != o.batch) return false;
  return o.case_id.empty() || c.id == o.case_id;
}

std::vector<Record> run_case(const Case& c, Workbench& bench) {
  try {
    return c.run(bench);
  } catch (const std::exception& e) {
    return {record_of_error(c.gate, c.id, dtype_name(c.dtype), Error(ErrorCode::internal, std::string("exception: ") + e.what()))};
  }
}

Result<void> finish(RunReport& report, const std::filesystem::path& out) {
  if (auto written = write_report(report, out); !written) return written;
  std::cout << closing_lines(report) << "report: " << (out / "SUMMARY.md").string() << '\n';
  if (report.any_failed()) {
    return fail(ErrorCode::runtime_error, std::to_string(report.counts()[Status::failed]) + " conformance records failed (" +
                                              (out / "SUMMARY.md").string() + ")");
  }
  // A run in which nothing passed (an unimplemented device, say) is no evidence either.
  if (report.counts()[Status::passed] == 0) {
    return fail(ErrorCode::not_implemented, "no conformance record passed (" + (out / "SUMMARY.md").string() + ")");
  }
  return {};
}

Result<void> print_output_hashes(Workbench& bench, const ConformOptions& o, const std::vector<DType>& dtypes) {
  if (!o.seed || !o.batch || dtypes.size() != 1) {
    return fail(ErrorCode::invalid_argument, "--print-output-sha256 needs --dtype, --seed and --batch");
  }
  auto outputs = run_determinism_case(bench, *o.seed, dtypes.front(), *o.batch);
  if (!outputs) return std::unexpected(outputs.error());
  for (const auto& [name, hash] : hashes_of(*outputs)) std::cout << name << ' ' << hash << '\n';
  return {};
}

}  // namespace

Result<void> run_conform(Registry& registry, const ConformOptions& o) {
  auto known = registry.spec(o.key);
  if (!known) return std::unexpected(known.error());
  const OpSpec* spec = *known;
  auto device = parse_device(o.device);
  if (!device) return std::unexpected(device.error().with_context("--device"));
  auto dtypes = dtypes_of(*spec, o.dtype);
  if (!dtypes) return std::unexpected(dtypes.error());
  auto layout = OperatorLayout::of(*spec);
  if (!layout) return std::unexpected(layout.error());
  for (const std::string& gate : o.only) {
    if (find_gate(gate) == nullptr) return fail(ErrorCode::invalid_argument, "--only " + gate + ": no such gate");
  }

  const std::filesystem::path out =
      o.out.empty() ? std::filesystem::path("rlk-conform-" + o.key + "-" + to_string(*device)) : std::filesystem::path(o.out);
  RunReport report;
  report.key = spec->key;
  report.device = to_string(*device);
  for (DType dtype : *dtypes) report.dtypes.push_back(dtype_name(dtype));
  report.quick = o.quick;
  report.command = full_command(o);
  report.started_at = utc_now();
  report.gates = spec->conformance.gates;
  const auto started = std::chrono::steady_clock::now();

  auto op = registry.get_op(spec->key, *device);
  const SlotStatus slot = registry.status(spec->key, *device);
  const std::string implementation = op ? op->implementation() : slot.library;
  Environment env = describe_environment(*device, *spec, implementation, slot.build_info);
  report.environment = env.header;
  if (!op) {
    Record r = record_of_error("get_op", "get_op/" + to_string(*device), o.dtype, op.error());
    r.repro = base_command(o);
    report.records.push_back(std::move(r));
    if (o.print_output_sha256) return std::unexpected(op.error());
    return finish(report, out);
  }

  auto checkpoint = load_checkpoint(*spec, *layout, o);
  if (!checkpoint) return std::unexpected(checkpoint.error());
  PlanContext context;
  context.spec = spec;
  context.layout = &*layout;
  context.sizes = GateSizes::of(spec->conformance, o.quick);
  context.dtypes = *dtypes;
  context.device = *device;
  context.quick = o.quick;
  context.implementation = op->implementation();
  context.build_info = slot.build_info;
  context.fingerprint = env.fingerprint;
  std::error_code self_error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", self_error);
  context.self_command = {self_error ? std::string("rlk") : self.string(), "conform", spec->key, "--device", to_string(*device)};

  const reference::ReferenceEntry* reference = reference::find_reference(spec->key);
  auto executor = Executor::create(implementation_of(*op), *layout);
  if (!executor) return std::unexpected(executor.error());
  Workbench bench(*spec, *layout, std::move(*executor), reference, o.pool_rows > 0 ? o.pool_rows : context.sizes.pool_rows(),
                  std::move(*checkpoint));
  if (o.print_output_sha256) return print_output_hashes(bench, o, *dtypes);

  std::vector<Case> plan;
  for (const std::string& gate : spec->conformance.gates) {
    for (Case& c : find_gate(gate)(context)) {
      if (selected(c, o)) plan.push_back(std::move(c));
    }
  }
  if (plan.empty()) return fail(ErrorCode::invalid_argument, "the options select no case of " + spec->key + "'s gates");

  Progress progress(plan.size(), isatty(STDERR_FILENO) != 0);
  const std::string repro_base = base_command(o);
  for (const Case& c : plan) {
    progress.begin(c.gate, c.id);
    std::vector<Record> records = run_case(c, bench);
    progress.end(c.id, records);
    for (Record& r : records) {
      r.repro = repro_base + (o.dtype.empty() ? " --dtype " + dtype_name(c.dtype) : "") + " --case " + c.id;
      report.records.push_back(std::move(r));
    }
  }
  progress.finish();
  report.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return finish(report, out);
}

}  // namespace rlk::conform
