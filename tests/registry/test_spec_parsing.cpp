#include <fstream>
#include <regex>

#include "rlk/spec.hpp"
#include "test_env.hpp"

namespace rlk {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string kMinimal = R"(key: demo_op
model: demo
version: 1
summary: demo
symbols:
  B: {min: 1}
arguments:
  x: {role: input, shape: [B, 8], used_by: [forward]}
  y: {role: output, shape: [B, 8]}
numerics:
  float32: {storage: float32, accumulation: float32, rounding: once, tolerance: {atol: 0.001, rtol: 0.001}}
platforms:
  cpu: {implementation: reference}
  cuda: {implementation: plugin, library: rlk_backend_demo}
  rocm: {implementation: fail_closed, reason: "no rocm"}
  npu: {implementation: fail_closed, reason: "no npu"}
  musa: {implementation: fail_closed, reason: "no musa"}
)";

// Replaces the first occurrence of `from` in the minimal spec by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = kMinimal;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string refusal(const std::string& text) {
  auto spec = parse_spec_text(text, "demo.yaml");
  EXPECT_FALSE(spec.has_value());
  if (spec) return "";
  EXPECT_EQ(spec.error().code(), ErrorCode::spec_invalid);
  return spec.error().to_string();
}

TEST(SpecParsing, RepositorySpecParsesWithAllFields) {
  const auto path = std::filesystem::path(RLK_REPO_SPECS) / "qwenimage" / "adaln_mod_projection.yaml";
  auto spec = load_spec_file(path);
  ASSERT_TRUE(spec) << spec.error().to_string();
  EXPECT_EQ(spec->key, "qwenimage_adaln_mod_projection");
  EXPECT_EQ(spec->model, "qwenimage");
  ASSERT_NE(spec->argument("weight"), nullptr);
  EXPECT_EQ(spec->argument("weight")->shape[0].extent, 18432);
  EXPECT_EQ(spec->argument("temb")->shape[0].symbol, "B");
  EXPECT_EQ(spec->arguments_of(Direction::forward).size(), 4u);
  EXPECT_EQ(spec->arguments_of(Direction::backward).size(), 6u);
  EXPECT_EQ(spec->numeric(DType::float32)->tolerance.atol, 1e-4);
  EXPECT_EQ(spec->slot(Platform::cuda)->library, "rlk_backend_cuda");
  EXPECT_EQ(spec->slot(Platform::npu)->kind, SlotKind::fail_closed);
  EXPECT_EQ(spec->conformance.seeds, (std::vector<std::uint64_t>{0, 127, 2026}));
  EXPECT_EQ(spec->sha256, sha256_hex(read_file(path)));
}

TEST(SpecParsing, MinimalSpecParses) {
  auto spec = parse_spec_text(kMinimal, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().to_string();
  EXPECT_EQ(spec->slots.size(), 5u);
}

TEST(SpecParsing, YamlSyntaxErrorNamesLineAndColumn) {
  const auto message = refusal(edited("  x: {role: input, shape: [B, 8], used_by: [forward]}", "  x: {role: input, shape: [B, 8]"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:")) << message;
  EXPECT_TRUE(test::contains(message, "YAML syntax error")) << message;
}

TEST(SpecParsing, UnknownTopLevelFieldIsRefusedAtItsPosition) {
  const auto message = refusal(kMinimal + "colour: blue\n");
  EXPECT_TRUE(test::contains(message, "demo.yaml:18:1: unknown field 'colour'")) << message;
}

TEST(SpecParsing, UnknownArgumentFieldIsRefused) {
  const auto message = refusal(edited("x: {role: input,", "x: {role: input, stride: 3,"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:8:")) << message;
  EXPECT_TRUE(test::contains(message, "unknown field 'stride' in 'arguments.x'")) << message;
}

TEST(SpecParsing, MissingRequiredFieldIsNamed) {
  const auto message = refusal(edited("version: 1\n", ""));
  EXPECT_TRUE(test::contains(message, "missing required field 'version'")) << message;
}

TEST(SpecParsing, UnknownRoleIsRefusedWithExpectedValues) {
  const auto message = refusal(edited("role: output", "role: result"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:9:")) << message;
  EXPECT_TRUE(test::contains(message, "unknown role 'result' (expected input, output or gradient)")) << message;
}

TEST(SpecParsing, UndeclaredShapeSymbolIsRefused) {
  const auto message = refusal(edited("y: {role: output, shape: [B, 8]}", "y: {role: output, shape: [T, 8]}"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:9:29:")) << message;
  EXPECT_TRUE(test::contains(message, "symbol 'T' is not declared")) << message;
}

TEST(SpecParsing, UnknownDtypeIsRefused) {
  const auto message = refusal(edited("  float32: {storage", "  float16: {storage"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:11:3: unknown execution dtype 'float16'")) << message;
}

TEST(SpecParsing, PluginSlotWithoutLibraryIsRefused) {
  const auto message = refusal(edited("{implementation: plugin, library: rlk_backend_demo}", "{implementation: plugin}"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:14:")) << message;
  EXPECT_TRUE(test::contains(message, "needs 'library: <name>'")) << message;
}

TEST(SpecParsing, FailClosedSlotWithoutReasonIsRefused) {
  const auto message = refusal(edited("{implementation: fail_closed, reason: \"no npu\"}", "{implementation: fail_closed}"));
  EXPECT_TRUE(test::contains(message, "needs 'reason: <text>'")) << message;
}

TEST(SpecParsing, MissingPlatformSlotIsRefused) {
  const auto message = refusal(edited("  musa: {implementation: fail_closed, reason: \"no musa\"}\n", ""));
  EXPECT_TRUE(test::contains(message, "missing required field 'musa'")) << message;
}

TEST(SpecParsing, NegativeToleranceIsRefused) {
  const auto message = refusal(edited("atol: 0.001", "atol: -1"));
  EXPECT_TRUE(test::contains(message, "tolerances must be non-negative")) << message;
}

TEST(SpecParsing, NonNumericVersionIsRefused) {
  const auto message = refusal(edited("version: 1", "version: one"));
  EXPECT_TRUE(test::contains(message, "demo.yaml:3:10: 'version' must be a number")) << message;
}

TEST(SpecParsing, KeyMustBeModelQualified) {
  const auto message = refusal(edited("key: demo_op", "key: op"));
  EXPECT_TRUE(test::contains(message, "must start with the model name 'demo_'")) << message;
}

TEST(SpecParsing, ConformanceInputMustBeAnInputArgument) {
  const auto message = refusal(kMinimal + "conformance:\n  batch_symbol: B\n  inputs:\n    y: {std: 1}\n  seeds: [0]\n  gates: [accuracy]\n");
  EXPECT_TRUE(test::contains(message, "demo.yaml:21:5: 'y' is not an input argument")) << message;
}

TEST(SpecParsing, UnknownGateIsRefused) {
  const auto message = refusal(kMinimal + "conformance:\n  batch_symbol: B\n  inputs:\n    x: {std: 1}\n  seeds: [0]\n  gates: [speed]\n");
  EXPECT_TRUE(test::contains(message, "unknown gate 'speed'")) << message;
}

TEST(SpecParsing, RepeatedParameterSetNameIsRefused) {
  const auto message = refusal(kMinimal + "conformance:\n  batch_symbol: B\n  inputs:\n    x: {std: 1}\n  seeds: [0]\n"
                                          "  parameter_sets: [image, image]\n  gates: [accuracy]\n");
  EXPECT_TRUE(test::contains(message, "demo.yaml:23:27: parameter set names must be non-empty and distinct ('image')")) << message;
}

TEST(SpecParsing, MissingFileIsAnIoError) {
  auto spec = load_spec_file("/nonexistent/spec.yaml");
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().code(), ErrorCode::io_error);
}

}  // namespace
}  // namespace rlk
