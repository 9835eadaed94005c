// The rlk program end to end, run as a user runs it: list and explain report every slot's
// state and reason, errors are one line on stderr with a non-zero status, and make-inputs
// followed by run on the CPU writes finite outputs of the spec's shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "rlk/bfloat16.hpp"
#include "rlk/registry.hpp"
#include "rlk/safetensors.hpp"

namespace {

namespace fs = std::filesystem;
using rlk::DType;
using rlk::Direction;

constexpr const char* kKey = "qwenimage_adaln_mod_projection";
constexpr std::int64_t kBatch = 2;

struct Completed {
  int status = -1;
  std::string out;
  std::string err;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

class RlkCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(test->test_suite_name()) + "_" + test->name();
    std::ranges::replace(name, '/', '_');
    directory_ = fs::temp_directory_path() / ("rlk_cli_" + std::to_string(::getpid()) + "_" + name);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path file(const std::string& name) const { return directory_ / name; }

  Completed rlk(const std::string& arguments) const {
    const fs::path err = file("stderr.txt");
    const std::string command = std::string(RLK_CLI_PATH) + " " + arguments + " 2>" + err.string();
    Completed completed;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return completed;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) completed.out.append(buffer, n);
    const int status = ::pclose(pipe);
    completed.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream stream(err);
    completed.err.assign(std::istreambuf_iterator<char>(stream), {});
    return completed;
  }

  // Asserts the program failed with exactly one "rlk: error: " line and returns it.
  static std::string one_error_line(const Completed& completed) {
    EXPECT_NE(completed.status, 0);
    const auto lines = lines_of(completed.err);
    EXPECT_EQ(lines.size(), 1u) << completed.err;
    if (lines.empty()) return "";
    EXPECT_EQ(lines[0].rfind("rlk: error: ", 0), 0u) << lines[0];
    return lines[0];
  }

 private:
  fs::path directory_;
};

TEST_F(RlkCliTest, ListShowsCpuAvailableAndNpuNotImplemented) {
  const Completed listed = rlk("list");
  ASSERT_EQ(listed.status, 0) << listed.err;
  const auto lines = lines_of(listed.out);
  ASSERT_FALSE(lines.empty());
  // Columns are separated by two or more spaces; states contain single spaces.
  const std::regex separator(" {2,}");
  auto columns = [&](const std::string& line) {
    return std::vector<std::string>(std::sregex_token_iterator(line.begin(), line.end(), separator, -1), {});
  };
  const auto header = columns(lines[0]);
  const auto cpu = std::ranges::find(header, "CPU") - header.begin();
  const auto npu = std::ranges::find(header, "NPU") - header.begin();
  ASSERT_LT(static_cast<std::size_t>(npu), header.size()) << lines[0];
  bool found = false;
  for (const std::string& line : lines) {
    const auto row = columns(line);
    if (row.empty() || row[0] != kKey) continue;
    found = true;
    ASSERT_EQ(row.size(), header.size()) << line;
    EXPECT_EQ(row[cpu], "available");
    EXPECT_EQ(row[npu], "not implemented");
  }
  EXPECT_TRUE(found) << listed.out;
}

TEST_F(RlkCliTest, ExplainPrintsTheReasonOfEveryFailClosedSlot) {
  auto registry = rlk::Registry::open();
  ASSERT_TRUE(registry) << registry.error().to_string();
  const rlk::OpSpec* spec = (*registry)->find_spec(kKey);
  ASSERT_NE(spec, nullptr);
  const Completed explained = rlk(std::string("explain ") + kKey);
  ASSERT_EQ(explained.status, 0) << explained.err;
  EXPECT_NE(explained.out.find(spec->sha256), std::string::npos) << explained.out;
  for (rlk::Platform platform : {rlk::Platform::rocm, rlk::Platform::npu, rlk::Platform::musa}) {
    const rlk::PlatformSlot* slot = spec->slot(platform);
    ASSERT_NE(slot, nullptr);
    ASSERT_EQ(slot->kind, rlk::SlotKind::fail_closed) << to_string(platform);
    EXPECT_NE(explained.out.find(slot->reason), std::string::npos) << to_string(platform) << ":\n" << explained.out;
  }
}

TEST_F(RlkCliTest, ExplainWithDeviceShowsThatDevicesState) {
  const Completed explained = rlk(std::string("explain ") + kKey + " --device cpu");
  ASSERT_EQ(explained.status, 0) << explained.err;
  EXPECT_NE(explained.out.find("device cpu:\n  cpu: reference, available"), std::string::npos) << explained.out;
}

TEST_F(RlkCliTest, UnknownKeyFailsWithOneLineNamingTheNearestKey) {
  for (const std::string command : {"explain qwenimage_adaln_mod_projektion",
                                    "run qwenimage_adaln_mod_projektion --device cpu --dtype fp32 --inputs x --out y"}) {
    const std::string line = one_error_line(rlk(command));
    EXPECT_NE(line.find("unknown key"), std::string::npos) << line;
    EXPECT_NE(line.find(kKey), std::string::npos) << line;
  }
}

TEST_F(RlkCliTest, BadCommandLineFailsWithOneLine) {
  one_error_line(rlk(""));
  one_error_line(rlk(std::string("run ") + kKey + " --device cpu"));
}

// The bench's counts are checked before any device is touched: a negative warm-up is refused
// naming the option and its range; no warm-up at all is a valid count (the call then fails only
// for what this machine lacks, never for --warmup).
TEST_F(RlkCliTest, BenchTakesZeroWarmUpsAndRefusesANegativeCountNamingIt) {
  const std::string negative = one_error_line(rlk(std::string("bench ") + kKey + " --device cuda:0 --warmup -1"));
  EXPECT_NE(negative.find("--warmup"), std::string::npos) << negative;
  EXPECT_NE(negative.find("0 to 100000"), std::string::npos) << negative;
  const std::string none = one_error_line(rlk(std::string("bench ") + kKey + " --device cpu --warmup 0"));
  EXPECT_EQ(none.find("--warmup"), std::string::npos) << none;
  EXPECT_NE(none.find("--device"), std::string::npos) << none;
}

// The same for the warm-up's wall time (--warmup-ms): a negative one is refused naming it; zero is
// valid (count-only warm-up).
TEST_F(RlkCliTest, BenchTakesZeroWarmUpTimeAndRefusesANegativeOneNamingIt) {
  const std::string negative = one_error_line(rlk(std::string("bench ") + kKey + " --device cuda:0 --warmup-ms -5"));
  EXPECT_NE(negative.find("--warmup-ms"), std::string::npos) << negative;
  EXPECT_NE(negative.find("0 to 600000"), std::string::npos) << negative;
  const std::string none = one_error_line(rlk(std::string("bench ") + kKey + " --device cpu --warmup-ms 0"));
  EXPECT_EQ(none.find("--warmup-ms"), std::string::npos) << none;
  EXPECT_NE(none.find("--device"), std::string::npos) << none;
}

TEST_F(RlkCliTest, EverySubcommandHelpExitsZero) {
  for (const std::string command : {"", "list", "explain", "make-inputs", "run"}) {
    const Completed help = rlk(command + " --help");
    EXPECT_EQ(help.status, 0) << command << ": " << help.err;
    EXPECT_NE(help.out.find("Usage"), std::string::npos) << command << ": " << help.out;
  }
}

bool is_nan(DType dtype, const std::byte* element) {
  switch (dtype) {
    case DType::bfloat16: return std::isnan(rlk::to_float(*reinterpret_cast<const rlk::bfloat16*>(element)));
    case DType::float32: return std::isnan(*reinterpret_cast<const float*>(element));
    case DType::float64: return std::isnan(*reinterpret_cast<const double*>(element));
  }
  return true;
}

struct RunCase {
  Direction direction;
  DType dtype;
};

void PrintTo(const RunCase& run, std::ostream* os) { *os << rlk::to_string(run.direction) << " " << rlk::to_string(run.dtype); }

class RlkRunTest : public RlkCliTest, public ::testing::WithParamInterface<RunCase> {};

TEST_P(RlkRunTest, MakeInputsThenRunOnCpuWritesFiniteOutputsOfTheSpecShapes) {
  const auto [direction, dtype] = GetParam();
  const std::string flags = std::string(" --dtype ") + std::string(rlk::to_string(dtype)) +
                            (direction == Direction::backward ? " --backward" : "");
  const std::string inputs = file("inputs.safetensors").string();
  const std::string outputs = file("outputs.safetensors").string();
  const Completed made = rlk(std::string("make-inputs ") + kKey + flags + " --batch " + std::to_string(kBatch) + " --out " + inputs);
  ASSERT_EQ(made.status, 0) << made.err;
  const Completed ran = rlk(std::string("run ") + kKey + flags + " --device cpu --inputs " + inputs + " --out " + outputs);
  ASSERT_EQ(ran.status, 0) << ran.err;

  auto registry = rlk::Registry::open();
  ASSERT_TRUE(registry) << registry.error().to_string();
  const rlk::OpSpec* spec = (*registry)->find_spec(kKey);
  ASSERT_NE(spec, nullptr);
  auto written = rlk::read_safetensors(outputs);
  ASSERT_TRUE(written) << written.error().to_string();
  std::size_t expected_outputs = 0;
  for (const rlk::ArgumentSpec* argument : spec->arguments_of(direction)) {
    if (!argument->writes()) continue;
    ++expected_outputs;
    const auto found = written->find(argument->name);
    ASSERT_NE(found, written->end()) << argument->name;
    std::vector<std::int64_t> shape;
    for (const rlk::Dim& dim : argument->shape) shape.push_back(dim.symbol.empty() ? dim.extent : kBatch);
    EXPECT_EQ(found->second.shape, shape) << argument->name;
    EXPECT_EQ(found->second.dtype, dtype) << argument->name;
    const std::size_t size = rlk::element_size(dtype);
    std::size_t nans = 0;
    for (std::size_t i = 0; i < found->second.bytes.size(); i += size) nans += is_nan(dtype, &found->second.bytes[i]);
    EXPECT_EQ(nans, 0u) << argument->name;
  }
  EXPECT_EQ(written->size(), expected_outputs);

  auto header = rlk::read_safetensors_header(outputs);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->metadata.at("implementation"), "reference");
  EXPECT_EQ(header->metadata.at("device"), "cpu");
  EXPECT_EQ(header->metadata.at("direction"), rlk::to_string(direction));
  EXPECT_EQ(header->metadata.at("spec_sha256"), spec->sha256);
}

INSTANTIATE_TEST_SUITE_P(DirectionsAndDtypes, RlkRunTest,
                         ::testing::Values(RunCase{Direction::forward, DType::float32}, RunCase{Direction::forward, DType::bfloat16},
                                           RunCase{Direction::backward, DType::float32}, RunCase{Direction::backward, DType::bfloat16}),
                         [](const auto& info) {
                           return std::string(rlk::to_string(info.param.direction)) + "_" + std::string(rlk::to_string(info.param.dtype));
                         });

TEST_F(RlkCliTest, RunRefusesAFileWithAnotherDtypeNamingTheTensor) {
  const std::string inputs = file("inputs.safetensors").string();
  ASSERT_EQ(rlk(std::string("make-inputs ") + kKey + " --dtype fp32 --batch 1 --out " + inputs).status, 0);
  auto tensors = rlk::read_safetensors(inputs);
  ASSERT_TRUE(tensors) << tensors.error().to_string();
  tensors->insert_or_assign("weight", rlk::HostTensor::zeros(DType::float64, tensors->at("weight").shape));
  ASSERT_TRUE(rlk::write_safetensors(inputs, *tensors));

  const std::string line = one_error_line(
      rlk(std::string("run ") + kKey + " --device cpu --dtype fp32 --inputs " + inputs + " --out " + file("out.safetensors").string()));
  EXPECT_NE(line.find("'weight'"), std::string::npos) << line;
  EXPECT_FALSE(fs::exists(file("out.safetensors")));
}

}  // namespace
