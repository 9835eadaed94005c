// Bad input is refused with the argument's name, and no output byte is written.
#include <cstring>

#include "test_env.hpp"

namespace rlk {
namespace {

constexpr float kSentinel = -12345.0f;

class Validation : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = test::open_registry({RLK_TEST_SPECS}, {RLK_TEST_PLUGIN_DIR});
    auto op = registry_->get_op("test_alpha", "cuda:0");
    ASSERT_TRUE(op) << op.error().to_string();
    op_.emplace(*op);
    for (int i = 0; i < 8; ++i) x_[i] = static_cast<float>(i + 1);
    std::fill(std::begin(y_), std::end(y_), kSentinel);
  }

  TensorMap good_args() {
    return {{"x", test::host_tensor(x_, shape_, kDevice)}, {"y", test::host_tensor(y_, shape_, kDevice)}};
  }

  // Runs with `args`, expects a refusal naming `needle`, and checks that y is untouched.
  void expect_refused(const TensorMap& args, const std::string& needle) {
    auto result = op_->forward(args);
    ASSERT_FALSE(result) << "expected a refusal mentioning " << needle;
    EXPECT_EQ(result.error().code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(test::contains(result.error().to_string(), needle)) << result.error().to_string();
    for (float v : y_) ASSERT_EQ(v, kSentinel) << "an output byte was written on a refused call";
  }

  static constexpr DLDevice kDevice{kDLCUDA, 0};
  std::shared_ptr<Registry> registry_;
  std::optional<Op> op_;
  std::vector<int64_t> shape_{2, 4};
  alignas(16) float x_[16] = {};
  alignas(16) float y_[16] = {};
};

TEST_F(Validation, GoodCallRuns) {
  auto result = op_->forward(good_args());
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(y_[7], 16.0f);
}

TEST_F(Validation, WrongDtypeNamesTheArgument) {
  auto args = good_args();
  args["x"].dtype = DLDataType{kDLFloat, 16, 1};
  expect_refused(args, "argument 'x' has an unsupported dtype");
}

TEST_F(Validation, MixedDtypesNameBothArguments) {
  auto args = good_args();
  args["y"].dtype = DLDataType{kDLFloat, 64, 1};
  expect_refused(args, "argument 'y' has an unsupported dtype");
}

TEST_F(Validation, WrongFixedExtentNamesTheArgumentAndTheSpecShape) {
  std::vector<int64_t> wrong{2, 5};
  auto args = good_args();
  args["x"].shape = wrong.data();
  expect_refused(args, "argument 'x' has shape [2, 5] but the spec requires [B, 4]");
}

TEST_F(Validation, InconsistentSymbolNamesTheArgument) {
  std::vector<int64_t> wrong{3, 4};
  auto args = good_args();
  args["y"].shape = wrong.data();
  expect_refused(args, "argument 'y' has B = 3 but an earlier argument bound B = 2");
}

TEST_F(Validation, ZeroRowsAreOutsideTheSymbolRange) {
  std::vector<int64_t> empty{0, 4};
  auto args = good_args();
  args["x"].shape = empty.data();
  args["y"].shape = empty.data();
  expect_refused(args, "binds B = 0 outside [1, inf]");
}

TEST_F(Validation, TensorOnAnotherDeviceIsRefused) {
  auto args = good_args();
  args["x"].device = DLDevice{kDLCUDA, 1};
  expect_refused(args, "argument 'x' is on cuda:1");
}

TEST_F(Validation, HostTensorForADeviceOperatorIsRefused) {
  auto args = good_args();
  args["x"].device = DLDevice{kDLCPU, 0};
  expect_refused(args, "argument 'x' is on cpu");
}

TEST_F(Validation, NullPointerIsRefused) {
  auto args = good_args();
  args["x"].data = nullptr;
  expect_refused(args, "argument 'x' has a null data pointer");
}

TEST_F(Validation, MisalignedPointerIsRefused) {
  auto args = good_args();
  args["x"].byte_offset = 4;
  expect_refused(args, "argument 'x' is not 16-byte aligned");
}

TEST_F(Validation, NonContiguousStridesAreRefused) {
  std::vector<int64_t> strides{8, 2};
  auto args = good_args();
  args["x"].strides = strides.data();
  expect_refused(args, "argument 'x' is not compact row-major");
}

TEST_F(Validation, CompactStridesAreAccepted) {
  std::vector<int64_t> strides{4, 1};
  auto args = good_args();
  args["x"].strides = strides.data();
  EXPECT_TRUE(op_->forward(args));
}

TEST_F(Validation, OutputAliasingAnInputIsRefused) {
  auto args = good_args();
  args["y"].data = x_;
  args["y"].byte_offset = 16;  // overlaps the second row of x
  auto result = op_->forward(args);
  ASSERT_FALSE(result);
  EXPECT_TRUE(test::contains(result.error().to_string(), "output 'y' overlaps argument 'x'")) << result.error().to_string();
  EXPECT_EQ(x_[4], 5.0f);
}

TEST_F(Validation, MissingArgumentIsNamedWithTheExpectedList) {
  TensorMap args{{"x", test::host_tensor(x_, shape_, kDevice)}};
  expect_refused(args, "missing argument 'y' (expected x, y)");
}

TEST_F(Validation, UnknownArgumentIsNamed) {
  auto args = good_args();
  args["z"] = args["x"];
  expect_refused(args, "unknown argument 'z'");
}

TEST_F(Validation, BackwardArgumentsAreCheckedAgainstTheBackwardList) {
  auto result = op_->backward(good_args());
  ASSERT_FALSE(result);
  EXPECT_TRUE(test::contains(result.error().to_string(), "test_alpha backward: unknown argument 'x'")) << result.error().to_string();
}

TEST(ReferenceValidation, WrongWeightShapeIsNamedForTheRealOperator) {
  auto registry = test::open_registry({RLK_REPO_SPECS}, {RLK_LIBRARY_DIR});
  auto op = registry->get_op("qwenimage_adaln_mod_projection", "cpu");
  ASSERT_TRUE(op) << op.error().to_string();
  std::vector<int64_t> temb_shape{1, 3072}, weight_shape{18432, 3071}, bias_shape{18432}, out_shape{1, 18432};
  std::vector<float> temb(3072, 1.0f), weight(18432 * 3072, 0.5f), bias(18432, 0.25f), out(18432, kSentinel);
  auto result = op->forward({{"temb", test::host_tensor(temb.data(), temb_shape)},
                             {"weight", test::host_tensor(weight.data(), weight_shape)},
                             {"bias", test::host_tensor(bias.data(), bias_shape)},
                             {"out", test::host_tensor(out.data(), out_shape)}});
  ASSERT_FALSE(result);
  EXPECT_TRUE(test::contains(result.error().to_string(), "argument 'weight' has shape [18432, 3071] but the spec requires [18432, 3072]"))
      << result.error().to_string();
  for (float v : out) ASSERT_EQ(v, kSentinel);
}

}  // namespace
}  // namespace rlk
