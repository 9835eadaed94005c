// `rlk conform` end to end: quick mode passes on the CPU reference, and each deliberately
// broken operator (tests/conform/plugins/broken_adaln_plugin.cpp) is caught by the gate
// that names its fault, and only by it.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

constexpr const char* kKey = "qwenimage_adaln_mod_projection";

struct RunResult {
  int exit_code = -1;
  std::string output;
  nlohmann::json acceptance;
};

// Runs `rlk conform KEY --device cpu --dtype fp32 --out DIR <arguments>` over one spec
// directory and reads back DIR/acceptance.json.
RunResult conform(const std::string& spec_dir, const std::string& name, const std::string& arguments) {
  const std::filesystem::path out = std::filesystem::path(RLK_CONFORM_OUT) / name;
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  const std::filesystem::path log = out / "stdout_stderr.txt";
  const std::string command = "RLK_SPEC_PATH='" + spec_dir + "' RLK_PLUGIN_PATH='" + RLK_CONFORM_TEST_PLUGINS + "' '" + RLK_CLI +
                              "' conform " + kKey + " --device cpu --dtype fp32 --out '" + out.string() + "' " + arguments +
                              " > '" + log.string() + "' 2>&1";
  RunResult result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream log_file(log);
  std::stringstream text;
  text << log_file.rdbuf();
  result.output = text.str();
  std::ifstream json_file(out / "acceptance.json");
  if (json_file) result.acceptance = nlohmann::json::parse(json_file);
  return result;
}

std::string broken(const std::string& behaviour) { return std::string(RLK_CONFORM_TEST_SPECS) + "/" + behaviour; }

int count(const RunResult& run, const std::string& gate, const std::string& status) {
  int n = 0;
  for (const auto& record : run.acceptance["records"]) {
    if (record["gate"] == gate && record["status"] == status) ++n;
  }
  return n;
}

const char* kAccuracyAndInvariance = "--quick --only accuracy --only batch_invariance";

TEST(ConformRunner, QuickRunPassesOnTheCpuReference) {
  const RunResult run = conform(RLK_REPO_SPECS, "reference_quick", "--quick");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.acceptance["schema_version"], 1);
  EXPECT_EQ(run.acceptance["counts"]["failed"], 0);
  for (const auto& gate : run.acceptance["gates"]) {
    EXPECT_GT(count(run, gate, "passed"), 0) << "gate " << gate << " passed no record";
  }
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(RLK_CONFORM_OUT) / "reference_quick" / "SUMMARY.md"));
  EXPECT_NE(run.output.find("0 failed"), std::string::npos) << run.output;
}

// The commit in acceptance.json is the source tree's HEAD at the build that made the runner, not
// at the cmake run that configured it (a tree configured at one commit and built at a later one
// recorded the earlier: cmake/write_commit_stamp.cmake).
TEST(ConformRunner, AcceptanceNamesTheCommitTheRunnerWasBuiltFrom) {
  std::string head;
  if (FILE* git = popen(("git -C '" + std::string(RLK_SOURCE_DIR) + "' rev-parse HEAD 2>/dev/null").c_str(), "r")) {
    char line[128] = {};
    if (std::fgets(line, sizeof line, git) != nullptr) head = line;
    pclose(git);
  }
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  if (head.size() != 40) GTEST_SKIP() << RLK_SOURCE_DIR << " is not a git checkout: the runner records \"unknown\"";
  const RunResult run = conform(RLK_REPO_SPECS, "commit", "--quick --only accuracy --batch 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string recorded = run.acceptance["environment"]["git_commit"];
  EXPECT_TRUE(recorded == head || recorded == head + "+dirty") << "recorded " << recorded << ", HEAD " << head;
}

TEST(ConformRunner, AccuracyRunsEachParameterSetOnItsOwnParameters) {
  // The repository's spec names two parameter sets (the image and the text stream's weights).
  const RunResult run = conform(RLK_REPO_SPECS, "parameter_sets", "--quick --only accuracy --batch 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::map<std::string, double>> worst_reference;  // set -> case tail + output -> value
  for (const auto& record : run.acceptance["records"]) {
    if (record["check"] != "fp64_oracle") continue;
    const std::string set = record["numbers"].value("parameter_set", "");
    const std::string id = record["case"];
    EXPECT_NE(id.find("/params=" + set + "/"), std::string::npos) << id;
    const std::string direction = id.substr(id.rfind('/') + 1);
    worst_reference[set][direction + "/" + record["output"].get<std::string>()] = record["numbers"]["max_abs"].get<double>() +
                                                                                  record["numbers"]["worst_reference"].get<double>();
  }
  ASSERT_EQ(worst_reference.size(), 2u) << run.acceptance.dump(1);
  ASSERT_TRUE(worst_reference.contains("image") && worst_reference.contains("text"));
  // The forward output depends on the weights, so the two sets' oracle results differ.
  EXPECT_NE(worst_reference["image"]["forward/out"], worst_reference["text"]["forward/out"]);
  EXPECT_EQ(worst_reference["image"].size(), worst_reference["text"].size());
}

// A checkpoint file for --weights: `rlk make-inputs` at another seed, so its `weight` differs
// from every synthetic draw of the runs below.
std::string checkpoint_file() {
  const std::filesystem::path file = std::filesystem::path(RLK_CONFORM_OUT) / "checkpoint_seed99.safetensors";
  if (!std::filesystem::exists(file)) {
    const std::string command = "RLK_SPEC_PATH='" + std::string(RLK_REPO_SPECS) + "' '" + RLK_CLI + "' make-inputs " + kKey +
                                " --dtype bf16 --batch 1 --seed 99 --out '" + file.string() + "' > /dev/null 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  return file.string();
}

// The forward output's oracle numbers per parameter set: they change with the weights.
std::map<std::string, double> forward_out_fingerprint(const RunResult& run) {
  std::map<std::string, double> values;
  for (const auto& record : run.acceptance["records"]) {
    const std::string id = record["case"];
    if (record["check"] == "fp64_oracle" && record["output"] == "out" && id.ends_with("/forward")) {
      values[id] = record["numbers"]["worst_reference"].get<double>() + record["numbers"]["max_abs"].get<double>();
    }
  }
  return values;
}

TEST(ConformRunner, CheckpointTensorReplacesTheInputOfItsShapeInTheAccuracyGate) {
  const std::string file = checkpoint_file();
  const RunResult synthetic = conform(RLK_REPO_SPECS, "checkpoint_synthetic", "--quick --only accuracy --batch 1");
  const RunResult real = conform(RLK_REPO_SPECS, "checkpoint_real", "--quick --only accuracy --batch 1 --weights '" + file + "' --tensor weight");
  ASSERT_EQ(synthetic.exit_code, 0) << synthetic.output;
  ASSERT_EQ(real.exit_code, 0) << real.output;
  ASSERT_FALSE(real.acceptance["records"].empty());
  for (const auto& record : real.acceptance["records"]) {
    ASSERT_TRUE(record["numbers"].contains("checkpoint")) << record.dump();
    EXPECT_EQ(record["numbers"]["checkpoint"]["tensor"], "weight");
    EXPECT_EQ(record["numbers"]["checkpoint"]["argument"], "weight");
    EXPECT_EQ(record["numbers"]["checkpoint"]["file"], file);
  }
  const auto with_synthetic = forward_out_fingerprint(synthetic);
  const auto with_checkpoint = forward_out_fingerprint(real);
  ASSERT_FALSE(with_synthetic.empty());
  ASSERT_EQ(with_synthetic.size(), with_checkpoint.size());
  for (const auto& [id, value] : with_synthetic) EXPECT_NE(with_checkpoint.at(id), value) << id << ": same numbers as the synthetic weights";
}

TEST(ConformRunner, CheckpointTensorMatchingNoSharedInputIsRefusedNamingIt) {
  const RunResult run = conform(RLK_REPO_SPECS, "checkpoint_wrong_shape", "--quick --only accuracy --weights '" + checkpoint_file() + "' --tensor temb");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("--tensor temb: 0 shared inputs of qwenimage_adaln_mod_projection have its shape"), std::string::npos)
      << run.output;
  const RunResult missing = conform(RLK_REPO_SPECS, "checkpoint_missing", "--quick --only accuracy --weights '" + checkpoint_file() + "' --tensor nope");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("nope"), std::string::npos) << missing.output;
}

TEST(ConformRunner, CorrectPluginPassesAccuracyAndInvariance) {
  const RunResult run = conform(broken("correct"), "correct", kAccuracyAndInvariance);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(count(run, "accuracy", "passed"), 0);
  EXPECT_GT(count(run, "batch_invariance", "passed"), 0);
}

TEST(ConformRunner, BytesThatChangeWithBatchSizeFailBatchInvariance) {
  const RunResult run = conform(broken("batch_dependent"), "batch_dependent", kAccuracyAndInvariance);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_GT(count(run, "batch_invariance", "failed"), 0) << run.output;
  EXPECT_EQ(count(run, "accuracy", "failed"), 0) << "an ulp of difference is within the tolerance";
}

TEST(ConformRunner, InaccurateOperatorFailsAccuracyOnly) {
  const RunResult run = conform(broken("inaccurate"), "inaccurate", kAccuracyAndInvariance);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_GT(count(run, "accuracy", "failed"), 0) << run.output;
  EXPECT_EQ(count(run, "batch_invariance", "failed"), 0);
  EXPECT_NE(run.output.find("FAILED accuracy/"), std::string::npos) << run.output;
}

TEST(ConformRunner, OperatorThatWritesNothingFailsAccuracyOnItsPoisonedOutputs) {
  const RunResult run = conform(broken("writes_nothing"), "writes_nothing", "--quick --only accuracy");
  EXPECT_NE(run.exit_code, 0) << run.output;
  int poisoned = 0;
  for (const auto& record : run.acceptance["records"]) {
    EXPECT_EQ(record["status"], "failed") << record.dump();
    if (record["numbers"].value("non_finite", 0) == record["numbers"].value("elements", -1)) ++poisoned;
  }
  EXPECT_GT(poisoned, 0) << "every element should still hold the NaN poison";
}

TEST(ConformRunner, WriteOutsideTheOutputFailsOnItsCanary) {
  const RunResult run = conform(broken("writes_past_end"), "writes_past_end", "--quick --only accuracy --batch 1");
  EXPECT_NE(run.exit_code, 0) << run.output;
  bool canary = false;
  for (const auto& record : run.acceptance["records"]) {
    canary = canary || record["detail"].get<std::string>().find("canary overwritten: byte 0 after") != std::string::npos;
  }
  EXPECT_TRUE(canary) << run.acceptance.dump(1);
}

TEST(ConformRunner, ReproLineRerunsExactlyThatCase) {
  const RunResult first = conform(broken("inaccurate"), "repro_first", "--quick --only accuracy --batch 1");
  ASSERT_NE(first.exit_code, 0) << first.output;
  std::string repro;
  std::string case_id;
  for (const auto& record : first.acceptance["records"]) {
    if (record["status"] == "failed") {
      repro = record["repro"];
      case_id = record["case"];
      break;
    }
  }
  ASSERT_FALSE(repro.empty());
  // The repro line starts with "rlk conform KEY --device cpu --dtype float32"; keep what follows.
  const std::string prefix = std::string("rlk conform ") + kKey + " --device cpu --dtype fp32";
  ASSERT_EQ(repro.rfind(prefix, 0), 0u) << repro;
  const RunResult again = conform(broken("inaccurate"), "repro_again", repro.substr(prefix.size()));
  EXPECT_NE(again.exit_code, 0) << again.output;
  ASSERT_FALSE(again.acceptance["records"].empty());
  for (const auto& record : again.acceptance["records"]) EXPECT_EQ(record["case"], case_id);
}

}  // namespace
