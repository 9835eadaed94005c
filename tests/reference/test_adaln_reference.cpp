// Properties of the qwenimage_adaln_mod_projection CPU reference and its FP64 oracle:
// agreement within the spec's tolerances, bytes independent of batch position and thread
// count, zero rows that leave parameter gradients unchanged, IEEE propagation of NaN/Inf,
// and the ReferenceEntry adapter and table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "qwenimage/adaln_mod_projection.hpp"
#include "qwenimage/adaln_mod_projection_entry.hpp"
#include "rlk/bfloat16.hpp"
#include "rlk/reference.hpp"

namespace {

using rlk::bfloat16;
using rlk::DType;
using rlk::reference::qwenimage::AdalnShape;
namespace model = rlk::reference::qwenimage;

constexpr const char* kKey = "qwenimage_adaln_mod_projection";

float widen(float value) { return value; }
float widen(bfloat16 value) { return rlk::to_float(value); }

template <class T>
T narrow(double value) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return rlk::to_bfloat16(static_cast<float>(value));
  } else {
    return static_cast<float>(value);
  }
}

template <class T>
constexpr DType kDType = std::is_same_v<T, float> ? DType::float32 : DType::bfloat16;

// Values drawn from N(mean, stddev^2), stored in T, redrawn when the stored value is zero.
template <class T>
std::vector<T> random_values(std::mt19937_64& generator, std::int64_t count, double stddev) {
  std::normal_distribution<double> distribution(0.0, stddev);
  std::vector<T> values(static_cast<std::size_t>(count));
  for (T& value : values) {
    do {
      value = narrow<T>(distribution(generator));
    } while (widen(value) == 0.0f);
  }
  return values;
}

// NaN bytes in every element, so an element the reference forgets to write is caught.
template <class T>
std::vector<T> poisoned(std::int64_t count) {
  std::vector<T> values(static_cast<std::size_t>(count));
  std::memset(static_cast<void*>(values.data()), 0xff, values.size() * sizeof(T));
  return values;
}

template <class T>
struct Problem {
  AdalnShape shape;
  std::vector<T> temb, weight, bias, grad_out;

  Problem(AdalnShape shape_, std::uint64_t seed) : shape(shape_) {
    std::mt19937_64 generator(seed);
    temb = random_values<T>(generator, shape.B * shape.K, 2.0);
    weight = random_values<T>(generator, shape.N * shape.K, 0.02);
    bias = random_values<T>(generator, shape.N, 0.02);
    grad_out = random_values<T>(generator, shape.B * shape.N, 1.0);
  }
};

template <class T>
struct Forward {
  std::vector<T> out;
};

template <class T>
struct Backward {
  std::vector<T> grad_temb, grad_weight, grad_bias;
};

template <class T>
Forward<T> run_forward(const Problem<T>& p, int threads) {
  Forward<T> result{poisoned<T>(p.shape.B * p.shape.N)};
  model::adaln_forward(p.temb.data(), p.weight.data(), p.bias.data(), result.out.data(), p.shape,
                       threads);
  return result;
}

template <class T>
Backward<T> run_backward(const Problem<T>& p, int threads) {
  Backward<T> result{poisoned<T>(p.shape.B * p.shape.K), poisoned<T>(p.shape.N * p.shape.K),
                     poisoned<T>(p.shape.N)};
  model::adaln_backward(p.temb.data(), p.weight.data(), p.grad_out.data(),
                        result.grad_temb.data(), result.grad_weight.data(),
                        result.grad_bias.data(), p.shape, threads);
  return result;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& values) {
  std::vector<double> wide(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) wide[i] = widen(values[i]);
  return wide;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// |x - ref| <= atol + rtol * |ref|, with ref the oracle rounded to the output dtype.
template <class T>
void expect_within_tolerance(const std::vector<T>& actual, const std::vector<double>& oracle,
                             const std::string& name) {
  const double atol = std::is_same_v<T, float> ? 1e-4 : 5e-3;
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 0x1p-7;
  ASSERT_EQ(actual.size(), oracle.size()) << name;
  int failures = 0;
  for (std::size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double expected = widen(narrow<T>(oracle[i]));
    const double value = widen(actual[i]);
    if (!(std::abs(value - expected) <= atol + rtol * std::abs(expected))) {
      ADD_FAILURE() << name << "[" << i << "] = " << value << ", oracle " << expected;
      ++failures;
    }
  }
}

template <class T>
void expect_reference_matches_oracle(AdalnShape shape, std::uint64_t seed) {
  SCOPED_TRACE("B=" + std::to_string(shape.B) + " K=" + std::to_string(shape.K) +
               " N=" + std::to_string(shape.N));
  const Problem<T> p(shape, seed);
  const std::vector<double> temb = to_double(p.temb), weight = to_double(p.weight),
                            bias = to_double(p.bias), grad_out = to_double(p.grad_out);
  std::vector<double> out(p.shape.B * p.shape.N), grad_temb(p.shape.B * p.shape.K),
      grad_weight(p.shape.N * p.shape.K), grad_bias(p.shape.N);
  model::adaln_forward_oracle(kDType<T>, temb.data(), weight.data(), bias.data(), out.data(),
                              shape, 0);
  model::adaln_backward_oracle(kDType<T>, temb.data(), weight.data(), grad_out.data(),
                               grad_temb.data(), grad_weight.data(), grad_bias.data(), shape, 0);
  expect_within_tolerance(run_forward(p, 0).out, out, "out");
  const Backward<T> backward = run_backward(p, 0);
  expect_within_tolerance(backward.grad_temb, grad_temb, "grad_temb");
  expect_within_tolerance(backward.grad_weight, grad_weight, "grad_weight");
  expect_within_tolerance(backward.grad_bias, grad_bias, "grad_bias");
}

// Small shapes, plus one that crosses every blocking boundary (64-row and 64-column chunks,
// 256-deep slices, 8-wide tiles, 4-row groups) with remainders.
const AdalnShape kSmallShapes[] = {{1, 64, 96}, {3, 64, 96}, {17, 64, 96}, {40, 64, 96}};
const AdalnShape kMidShape{259, 300, 262};

TEST(AdalnReference, ReferenceMatchesOracleFloat32) {
  for (AdalnShape shape : kSmallShapes) expect_reference_matches_oracle<float>(shape, 1);
  expect_reference_matches_oracle<float>(kMidShape, 2);
}

TEST(AdalnReference, ReferenceMatchesOracleBfloat16) {
  for (AdalnShape shape : kSmallShapes) expect_reference_matches_oracle<bfloat16>(shape, 3);
  expect_reference_matches_oracle<bfloat16>(kMidShape, 4);
}

// Row b of the batch (inputs of that row only) must give the bytes of that row run alone.
template <class T>
void expect_row_bytes_independent_of_batch() {
  const Problem<T> batch({40, 64, 96}, 5);
  const auto [B, K, N] = batch.shape;
  const Forward<T> batch_forward = run_forward(batch, 0);
  const Backward<T> batch_backward = run_backward(batch, 0);
  for (std::int64_t row : {0, 1, 3, 4, 17, 39}) {
    SCOPED_TRACE("row " + std::to_string(row));
    Problem<T> alone = batch;
    alone.shape.B = 1;
    alone.temb.assign(batch.temb.begin() + row * K, batch.temb.begin() + (row + 1) * K);
    alone.grad_out.assign(batch.grad_out.begin() + row * N,
                          batch.grad_out.begin() + (row + 1) * N);
    const Forward<T> alone_forward = run_forward(alone, 0);
    const Backward<T> alone_backward = run_backward(alone, 0);
    EXPECT_EQ(std::memcmp(alone_forward.out.data(), batch_forward.out.data() + row * N,
                          N * sizeof(T)),
              0);
    EXPECT_EQ(std::memcmp(alone_backward.grad_temb.data(),
                          batch_backward.grad_temb.data() + row * K, K * sizeof(T)),
              0);
  }
}

TEST(AdalnReference, RowBytesDoNotDependOnBatchSize) {
  expect_row_bytes_independent_of_batch<float>();
  expect_row_bytes_independent_of_batch<bfloat16>();
}

template <class T>
void expect_bytes_independent_of_threads() {
  const Problem<T> p(kMidShape, 6);
  const Forward<T> forward = run_forward(p, 1);
  const Backward<T> backward = run_backward(p, 1);
  for (int threads : {2, 7}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    EXPECT_TRUE(same_bytes(run_forward(p, threads).out, forward.out));
    const Backward<T> other = run_backward(p, threads);
    EXPECT_TRUE(same_bytes(other.grad_temb, backward.grad_temb));
    EXPECT_TRUE(same_bytes(other.grad_weight, backward.grad_weight));
    EXPECT_TRUE(same_bytes(other.grad_bias, backward.grad_bias));
  }
}

TEST(AdalnReference, BytesDoNotDependOnThreadCount) {
  expect_bytes_independent_of_threads<float>();
  expect_bytes_independent_of_threads<bfloat16>();
}

// Rows with grad_out = 0 appended to the batch add exact zeros to the ascending sums.
template <class T>
void expect_zero_rows_leave_parameter_gradients() {
  const Problem<T> p({37, 64, 96}, 7);
  Problem<T> padded(AdalnShape{p.shape.B + 30, p.shape.K, p.shape.N}, 8);
  std::copy(p.temb.begin(), p.temb.end(), padded.temb.begin());
  std::copy(p.grad_out.begin(), p.grad_out.end(), padded.grad_out.begin());
  std::fill(padded.grad_out.begin() + p.grad_out.size(), padded.grad_out.end(), narrow<T>(0.0));
  padded.weight = p.weight;
  padded.bias = p.bias;
  const Backward<T> plain = run_backward(p, 0);
  const Backward<T> with_zeros = run_backward(padded, 0);
  EXPECT_TRUE(same_bytes(plain.grad_weight, with_zeros.grad_weight));
  EXPECT_TRUE(same_bytes(plain.grad_bias, with_zeros.grad_bias));
}

TEST(AdalnReference, ZeroRowsAppendedLeaveParameterGradientsUnchanged) {
  expect_zero_rows_leave_parameter_gradients<float>();
  expect_zero_rows_leave_parameter_gradients<bfloat16>();
}

template <class T>
std::int64_t count_nan(const T* values, std::int64_t count) {
  std::int64_t nan = 0;
  for (std::int64_t i = 0; i < count; ++i) nan += std::isnan(widen(values[i]));
  return nan;
}

// A NaN reaches exactly the outputs that depend on it, and nothing else.
template <class T>
void expect_nan_propagates() {
  const T nan = narrow<T>(std::numeric_limits<double>::quiet_NaN());
  Problem<T> p({9, 64, 96}, 9);
  const auto [B, K, N] = p.shape;
  const std::int64_t row = 5, col = 11, feature = 30;
  p.temb[row * K + feature] = nan;
  const Forward<T> forward = run_forward(p, 0);
  EXPECT_EQ(count_nan(forward.out.data() + row * N, N), N);
  EXPECT_EQ(count_nan(forward.out.data(), B * N), N);

  p = Problem<T>({9, 64, 96}, 9);
  p.grad_out[row * N + col] = nan;
  const Backward<T> backward = run_backward(p, 0);
  EXPECT_EQ(count_nan(backward.grad_temb.data() + row * K, K), K);
  EXPECT_EQ(count_nan(backward.grad_temb.data(), B * K), K);
  EXPECT_EQ(count_nan(backward.grad_weight.data() + col * K, K), K);
  EXPECT_EQ(count_nan(backward.grad_weight.data(), N * K), K);
  EXPECT_TRUE(std::isnan(widen(backward.grad_bias[col])));
  EXPECT_EQ(count_nan(backward.grad_bias.data(), N), 1);
}

TEST(AdalnReference, NanPropagates) {
  expect_nan_propagates<float>();
  expect_nan_propagates<bfloat16>();
}

// An infinite input gives the infinity plain IEEE summation gives (not the NaN that a naive
// compensated sum would produce from inf - inf), matching the oracle.
template <class T>
void expect_infinity_propagates() {
  Problem<T> p({4, 64, 96}, 10);
  const auto [B, K, N] = p.shape;
  const std::int64_t row = 2, feature = 7;
  p.temb[row * K + feature] = narrow<T>(std::numeric_limits<double>::infinity());
  const Forward<T> forward = run_forward(p, 0);
  for (std::int64_t n = 0; n < N; ++n) {
    const float value = widen(forward.out[row * N + n]);
    EXPECT_TRUE(std::isinf(value)) << "out[" << row << ", " << n << "] = " << value;
    EXPECT_EQ(std::signbit(value), std::signbit(widen(p.weight[n * K + feature])));
  }
}

TEST(AdalnReference, InfinityPropagatesLikeIeeeSummation) {
  expect_infinity_propagates<float>();
  expect_infinity_propagates<bfloat16>();
}

// Compensation keeps a sum exact where plain float summation loses it:
// 1 + 2^-24 (eight times) - 1 = 2^-21, where float summation gives 0.
TEST(AdalnReference, SumsAreCompensated) {
  const AdalnShape shape{1, 10, 1};
  std::vector<float> temb(10, 30.0f);  // silu(30) == 30 in float
  std::vector<float> weight(10, 0x1p-24f / 30.0f);
  weight[0] = 1.0f / 30.0f;
  weight[9] = -1.0f / 30.0f;
  std::vector<float> bias{0.0f};
  std::vector<float> out{std::numeric_limits<float>::quiet_NaN()};
  model::adaln_forward(temb.data(), weight.data(), bias.data(), out.data(), shape, 1);
  float plain = 0.0f;
  for (int k = 0; k < 10; ++k) plain += 30.0f * weight[k];
  double exact = 0.0;
  for (int k = 0; k < 10; ++k) exact += double(30.0f * weight[k]);
  EXPECT_EQ(out[0], static_cast<float>(exact));
  EXPECT_NE(plain, static_cast<float>(exact));
}

// DLTensors over std::vector storage, keyed by the spec's argument names.
struct TensorArguments {
  std::vector<std::vector<std::int64_t>> shapes;
  rlk::TensorMap map;

  template <class V>
  void add(const std::string& name, V& values, std::vector<std::int64_t> shape,
           DLDataType dtype) {
    shapes.push_back(std::move(shape));
    DLTensor tensor{};
    tensor.data = const_cast<void*>(static_cast<const void*>(values.data()));
    tensor.device = {kDLCPU, 0};
    tensor.ndim = static_cast<std::int32_t>(shapes.back().size());
    tensor.dtype = dtype;
    tensor.shape = shapes.back().data();
    map.emplace(name, tensor);
  }
};

template <class T>
DLDataType dlpack_dtype() {
  return std::is_same_v<T, float> ? DLDataType{kDLFloat, 32, 1} : DLDataType{kDLBfloat, 16, 1};
}

template <class T, class Problem_>
TensorArguments forward_arguments(Problem_& p, std::vector<T>& out, DLDataType dtype) {
  const auto [B, K, N] = p.shape;
  TensorArguments args;
  args.shapes.reserve(8);
  args.add("temb", p.temb, {B, K}, dtype);
  args.add("weight", p.weight, {N, K}, dtype);
  args.add("bias", p.bias, {N}, dtype);
  args.add("out", out, {B, N}, dtype);
  return args;
}

template <class T, class Problem_>
TensorArguments backward_arguments(Problem_& p, std::vector<T>& grad_temb,
                                   std::vector<T>& grad_weight, std::vector<T>& grad_bias,
                                   DLDataType dtype) {
  const auto [B, K, N] = p.shape;
  TensorArguments args;
  args.shapes.reserve(8);
  args.add("temb", p.temb, {B, K}, dtype);
  args.add("weight", p.weight, {N, K}, dtype);
  args.add("grad_out", p.grad_out, {B, N}, dtype);
  args.add("grad_temb", grad_temb, {B, K}, dtype);
  args.add("grad_weight", grad_weight, {N, K}, dtype);
  args.add("grad_bias", grad_bias, {N}, dtype);
  return args;
}

// What the FP64 oracle entry reads: the storage values of a Problem, as doubles.
struct WideProblem {
  AdalnShape shape;
  std::vector<double> temb, weight, bias, grad_out;
};

template <class T>
void expect_entry_matches_model_functions() {
  const rlk::reference::ReferenceEntry* entry = rlk::reference::find_reference(kKey);
  ASSERT_NE(entry, nullptr);
  Problem<T> p({19, 64, 96}, 11);
  const auto [B, K, N] = p.shape;

  std::vector<T> out = poisoned<T>(B * N);
  ASSERT_TRUE(entry->run(rlk::Direction::forward, forward_arguments(p, out, dlpack_dtype<T>()).map, 3));
  EXPECT_TRUE(same_bytes(out, run_forward(p, 1).out));

  std::vector<T> grad_temb = poisoned<T>(B * K), grad_weight = poisoned<T>(N * K),
                 grad_bias = poisoned<T>(N);
  ASSERT_TRUE(entry->run(
      rlk::Direction::backward,
      backward_arguments(p, grad_temb, grad_weight, grad_bias, dlpack_dtype<T>()).map, 3));
  const Backward<T> backward = run_backward(p, 1);
  EXPECT_TRUE(same_bytes(grad_temb, backward.grad_temb));
  EXPECT_TRUE(same_bytes(grad_weight, backward.grad_weight));
  EXPECT_TRUE(same_bytes(grad_bias, backward.grad_bias));

  WideProblem wide{p.shape, to_double(p.temb), to_double(p.weight), to_double(p.bias),
                   to_double(p.grad_out)};
  const DLDataType float64{kDLFloat, 64, 1};
  std::vector<double> wide_out(B * N), expected_out(B * N);
  ASSERT_TRUE(entry->oracle(rlk::Direction::forward, kDType<T>,
                            forward_arguments(wide, wide_out, float64).map, 2));
  model::adaln_forward_oracle(kDType<T>, wide.temb.data(), wide.weight.data(), wide.bias.data(),
                              expected_out.data(), p.shape, 1);
  EXPECT_TRUE(same_bytes(wide_out, expected_out));

  std::vector<double> wide_grad_temb(B * K), wide_grad_weight(N * K), wide_grad_bias(N);
  std::vector<double> expected_grad_temb(B * K), expected_grad_weight(N * K),
      expected_grad_bias(N);
  ASSERT_TRUE(entry->oracle(
      rlk::Direction::backward, kDType<T>,
      backward_arguments(wide, wide_grad_temb, wide_grad_weight, wide_grad_bias, float64).map,
      2));
  model::adaln_backward_oracle(kDType<T>, wide.temb.data(), wide.weight.data(),
                               wide.grad_out.data(), expected_grad_temb.data(),
                               expected_grad_weight.data(), expected_grad_bias.data(), p.shape,
                               1);
  EXPECT_TRUE(same_bytes(wide_grad_temb, expected_grad_temb));
  EXPECT_TRUE(same_bytes(wide_grad_weight, expected_grad_weight));
  EXPECT_TRUE(same_bytes(wide_grad_bias, expected_grad_bias));
}

TEST(AdalnReferenceEntry, EntryMatchesModelFunctionsFloat32) {
  expect_entry_matches_model_functions<float>();
}

TEST(AdalnReferenceEntry, EntryMatchesModelFunctionsBfloat16) {
  expect_entry_matches_model_functions<bfloat16>();
}

TEST(AdalnReferenceEntry, TableHoldsTheEntryByKey) {
  ASSERT_EQ(rlk::reference::all_references().size(), 1u);
  EXPECT_EQ(rlk::reference::all_references()[0].key, kKey);
  EXPECT_EQ(rlk::reference::find_reference(kKey), &rlk::reference::all_references()[0]);
  EXPECT_EQ(rlk::reference::find_reference("no_such_operator"), nullptr);
}

TEST(AdalnReferenceEntry, RefusalsNameTheArgument) {
  const rlk::reference::ReferenceEntry& entry =
      model::qwenimage_adaln_mod_projection_reference();
  Problem<float> p({2, 64, 96}, 12);
  std::vector<float> out = poisoned<float>(2 * 96);

  TensorArguments missing_bias = forward_arguments(p, out, dlpack_dtype<float>());
  missing_bias.map.erase("bias");
  const auto missing = entry.run(rlk::Direction::forward, missing_bias.map, 1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), rlk::ErrorCode::invalid_argument);
  EXPECT_NE(missing.error().message().find("bias"), std::string::npos);

  TensorArguments wrong_dtype = forward_arguments(p, out, dlpack_dtype<float>());
  wrong_dtype.map.at("out").dtype = DLDataType{kDLBfloat, 16, 1};
  const auto mismatched = entry.run(rlk::Direction::forward, wrong_dtype.map, 1);
  ASSERT_FALSE(mismatched);
  EXPECT_NE(mismatched.error().message().find("out"), std::string::npos);

  const auto float64_run =
      entry.run(rlk::Direction::forward,
                forward_arguments(p, out, DLDataType{kDLFloat, 64, 1}).map, 1);
  ASSERT_FALSE(float64_run);
  EXPECT_NE(float64_run.error().message().find("temb"), std::string::npos);

  const auto float32_oracle = entry.oracle(rlk::Direction::forward, DType::float32,
                                           forward_arguments(p, out, dlpack_dtype<float>()).map, 1);
  ASSERT_FALSE(float32_oracle);
  EXPECT_NE(float32_oracle.error().message().find("temb"), std::string::npos);
  EXPECT_TRUE(std::isnan(out[0]));
}

}  // namespace
