// rlk bench's cuBLAS baseline (tools/common/cublas_baseline.hpp) computes the operator: a
// baseline that wrote wrong or partial outputs would make every speed ratio meaningless. Skips
// with the reason on a machine without a GPU.
#include <string>
#include <tuple>

#include "adaln_gpu_harness.hpp"
#include "common/cublas_baseline.hpp"

namespace rlk::cuda_test {
namespace {

using BaselineCase = std::tuple<DType, std::int64_t>;
class CublasBaselineAccuracy : public ::testing::TestWithParam<BaselineCase> {};

// Judged at twice the operator's tolerance: as PyTorch's autograd, the baseline rounds the SiLU
// gradient to the storage type before the elementwise backward, one rounding more than the
// operator's contract. Outputs start as NaN bytes, so an element the baseline leaves unwritten fails.
TEST_P(CublasBaselineAccuracy, EveryOutputIsWithinTwiceTheSpecToleranceOfTheOracle) {
  std::string skip_reason;
  if (!cuda_op_or_skip_reason(0, skip_reason)) GTEST_SKIP() << skip_reason;
  const auto [dtype, B] = GetParam();
  const Tolerance spec = tolerance_of(dtype);
  const Tolerance tol{2 * spec.atol, 2 * spec.rtol};
  const Inputs in = make_inputs(dtype, B, 11, ModStream::image);

  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  {
    DeviceTensor temb(in.temb, 0), weight(in.weight, 0), bias(in.bias, 0), grad_out(in.grad_out, 0);
    DeviceTensor out(dtype, {B, N}, 0), grad_temb(dtype, {B, K}, 0), grad_weight(dtype, {N, K}, 0), grad_bias(dtype, {N}, 0);
    DeviceTensor silu(dtype, {B, K}, 0), grad_silu(dtype, {B, K}, 0);
    bench::Status error;
    auto baseline = bench::CublasBaseline::create(stream, error);
    ASSERT_NE(baseline, nullptr) << error;
    const bench::BaselineProblem problem{dtype == DType::bfloat16, B, K, N};
    const bench::BaselineTensors t{temb.data(),      weight.data(),      bias.data(),      out.data(), grad_out.data(),
                                   grad_temb.data(), grad_weight.data(), grad_bias.data(), silu.data(), grad_silu.data()};
    ASSERT_EQ(baseline->forward(problem, t), "");
    ASSERT_EQ(baseline->backward(problem, t), "");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto oracle = run_oracle(in);
    const std::tuple<const char*, const DeviceTensor*> outputs[] = {
        {"out", &out}, {"grad_temb", &grad_temb}, {"grad_weight", &grad_weight}, {"grad_bias", &grad_bias}};
    for (const auto& [name, tensor] : outputs) expect_within(name, tensor->download(), oracle.at(name), tol);
  }
  check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

std::string baseline_name(const ::testing::TestParamInfo<BaselineCase>& info) {
  const auto [dtype, B] = info.param;
  return std::string(dtype == DType::float32 ? "fp32" : "bf16") + "_B" + std::to_string(B);
}

// B = 3 and 70: fewer batch rows than the bias gradient's 8 row groups, and several per group.
INSTANTIATE_TEST_SUITE_P(Bench, CublasBaselineAccuracy,
                         ::testing::Combine(::testing::Values(DType::float32, DType::bfloat16), ::testing::Values(3, 70)),
                         baseline_name);

}  // namespace
}  // namespace rlk::cuda_test
