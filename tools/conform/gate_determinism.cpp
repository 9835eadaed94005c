// Gate 8, determinism beyond one process: the determinism case (first seed, the first
// invariance batch, every direction) rerun in a fresh `rlk conform` process, on a second
// stream and replayed from a captured CUDA graph gives the same bytes. The SHA-256 of each
// output is recorded with the fingerprint (architecture, driver, runtime, build) it holds for.
#include <array>
#include <cstdio>
#include <sstream>

#include "compare.hpp"
#include "cuda_graph.hpp"
#include "determinism.hpp"
#include "plan.hpp"

namespace rlk::conform {

Result<CaseOutputs> run_determinism_case(Workbench& bench, std::uint64_t seed, DType dtype, std::int64_t batch,
                                         const tools::Stream* stream) {
  CaseOutputs outputs;
  for (const DirectionLayout& d : bench.layout().directions) {
    auto inputs = bench.first_rows(seed, dtype, d.direction, batch);
    if (!inputs) return std::unexpected(inputs.error());
    auto got = bench.executor().run(d.direction, *inputs, {}, stream);
    if (!got) return std::unexpected(got.error());
    for (auto& [name, tensor] : *got) outputs.emplace(std::string(to_string(d.direction)) + "/" + name, std::move(tensor));
  }
  return outputs;
}

Result<CaseOutputs> run_determinism_case_in_graph(Workbench& bench, std::uint64_t seed, DType dtype, std::int64_t batch) {
  CaseOutputs outputs;
  Executor& executor = bench.executor();
  for (const DirectionLayout& d : bench.layout().directions) {
    auto inputs = bench.first_rows(seed, dtype, d.direction, batch);
    if (!inputs) return std::unexpected(inputs.error());
    auto call = executor.prepare(d.direction, *inputs, executor.stream());
    if (!call) return std::unexpected(call.error());
    auto replayed = capture_and_replay(executor.stream(), [&] {
      return executor.implementation().run(call->direction, call->args, call->options);
    });
    if (!replayed) return std::unexpected(replayed.error());
    auto got = executor.collect(*call, {});
    if (!got) return std::unexpected(got.error());
    for (auto& [name, tensor] : *got) outputs.emplace(std::string(to_string(d.direction)) + "/" + name, std::move(tensor));
  }
  return outputs;
}

std::map<std::string, std::string> hashes_of(const CaseOutputs& outputs) {
  std::map<std::string, std::string> hashes;
  for (const auto& [name, tensor] : outputs) hashes.emplace(name, sha256_of(tensor.bytes));
  return hashes;
}

namespace {

std::string shell_quote(const std::string& word) {
  std::string quoted = "'";
  for (char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

// Runs the case in a fresh process and reads its "name sha256" lines.
Result<std::map<std::string, std::string>> hashes_from_fresh_process(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& word : argv) command += shell_quote(word) + " ";
  command += "2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return fail(ErrorCode::runtime_error, "could not start: " + command);
  std::string text;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe) != nullptr) text += chunk.data();
  const int status = pclose(pipe);
  if (status != 0) return fail(ErrorCode::runtime_error, "fresh process failed (" + command + "): " + text);
  // Only "name <64 hex digits>" lines are hashes; anything else the child printed is not.
  std::map<std::string, std::string> hashes;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto space = line.find(' ');
    if (space == std::string::npos || line.size() - space - 1 != 64) continue;
    const std::string hash = line.substr(space + 1);
    if (hash.find_first_not_of("0123456789abcdef") == std::string::npos) hashes.emplace(line.substr(0, space), hash);
  }
  return hashes;
}

std::vector<Record> compare_runs(const Case& c, const std::string& check, const CaseOutputs& want, const CaseOutputs& got,
                                 const std::string& fingerprint) {
  std::vector<Record> records;
  for (const auto& [name, tensor] : want) {
    const auto other = got.find(name);
    if (other == got.end()) {
      records.push_back(make_record(c, name, check, Status::failed, check + ": output missing"));
      continue;
    }
    const auto diff = compare_bytes(other->second.bytes, tensor.bytes, tensor.dtype);
    const std::string hash = sha256_of(tensor.bytes);
    records.push_back(make_record(c, name, check, diff.equal() ? Status::passed : Status::failed,
                                  check + ": " + (diff.equal() ? "byte-identical, sha256 " + hash.substr(0, 16)
                                                               : "differs at element " + std::to_string(diff.element) + ": " +
                                                                     diff.got + " vs " + diff.want),
                                  {{"sha256", hash}, {"fingerprint", fingerprint}}));
  }
  return records;
}

}  // namespace

std::vector<Case> plan_determinism(const PlanContext& context) {
  std::vector<Case> cases;
  if (context.sizes.seeds.empty()) return cases;
  const std::uint64_t seed = context.sizes.seeds.front();
  const std::int64_t batch = context.sizes.invariance_batches.empty() ? 1 : context.sizes.invariance_batches.front();
  const bool cuda = context.device.platform == Platform::cuda;
  const std::string fingerprint = context.fingerprint;
  for (DType dtype : context.dtypes) {
    auto add = [&](std::string check, bool applies, std::string reason, auto body) {
      Case c = batch_case("determinism", dtype, seed, batch, check);
      c.run = [c, body, check, applies, reason, seed, batch, fingerprint](Workbench& bench) -> std::vector<Record> {
        if (!applies) return {make_record(c, "", check, Status::skipped, reason)};
        auto want = run_determinism_case(bench, seed, c.dtype, batch);
        if (!want) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), want.error())};
        return body(c, bench, *want);
      };
      cases.push_back(std::move(c));
    };
    auto in_process = [fingerprint](auto rerun) {
      return [fingerprint, rerun](const Case& c, Workbench& bench, const CaseOutputs& want) -> std::vector<Record> {
        Result<CaseOutputs> got = rerun(c, bench);
        if (!got) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), got.error())};
        return compare_runs(c, c.id.substr(c.id.rfind('/') + 1), want, *got, fingerprint);
      };
    };
    const std::vector<std::string> self = context.self_command;
    add("fresh_process", true, "", [=](const Case& c, Workbench& bench, const CaseOutputs& want) -> std::vector<Record> {
      std::vector<std::string> argv = self;
      for (const std::string& word : {std::string("--dtype"), dtype_name(c.dtype), std::string("--seed"), std::to_string(seed),
                                      std::string("--batch"), std::to_string(batch), std::string("--pool-rows"),
                                      std::to_string(bench.pool_rows()), std::string("--print-output-sha256")}) {
        argv.push_back(word);
      }
      auto theirs = hashes_from_fresh_process(argv);
      if (!theirs) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), theirs.error())};
      std::vector<Record> records;
      for (const auto& [name, mine] : hashes_of(want)) {
        const auto found = theirs->find(name);
        const std::string other = found == theirs->end() ? "(none)" : found->second;
        records.push_back(make_record(c, name, "fresh_process", other == mine ? Status::passed : Status::failed,
                                      "fresh process: sha256 " + other.substr(0, 16) + (other == mine ? " = " : " != ") +
                                          "this process's " + mine.substr(0, 16),
                                      {{"sha256", mine}, {"fresh_process_sha256", other}, {"fingerprint", fingerprint}}));
      }
      return records;
    });
    add("other_stream", cuda, "cpu operators run on the caller's thread: there is no second stream",
        in_process([](const Case& c, Workbench& bench) -> Result<CaseOutputs> {
          auto stream = tools::Stream::create(bench.executor().device());
          if (!stream) return std::unexpected(stream.error());
          return run_determinism_case(bench, *c.seed, c.dtype, *c.batch, &*stream);
        }));
    add("cuda_graph", cuda, "CUDA graphs apply to cuda devices only",
        in_process([](const Case& c, Workbench& bench) -> Result<CaseOutputs> {
          return run_determinism_case_in_graph(bench, *c.seed, c.dtype, *c.batch);
        }));
  }
  return cases;
}

}  // namespace rlk::conform
