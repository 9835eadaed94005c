// The bf16 path may pick its GEMM implementation by B (mma.sync, or wgmma with a narrow or wide
// batch tile, cooperative or ping-pong) only because every choice gives the same bytes. This checks that claim directly on
// the kernels: each implementation, forced, against mma.sync, byte for byte, for every output,
// at batch sizes on both sides of each switch point; outputs are poisoned before every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "adaln_mod_projection_kernels.hpp"
#include "adaln_mod_projection_sm90.hpp"

namespace {

using namespace rlk::cuda::qwenimage;

constexpr int kK = 3072;
constexpr int kN = 18432;
constexpr int kMaxB = 2048;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

std::uint16_t bf16_bits(float v) {  // round to nearest even (inputs are finite)
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

std::vector<std::uint16_t> random_bf16(std::size_t n, float stddev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = bf16_bits(dist(rng));
  return v;
}

struct Device {
  void* temb = nullptr;
  void* weight = nullptr;
  void* bias = nullptr;
  void* grad_out = nullptr;
  void* out = nullptr;
  void* grad_temb = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

class Bf16GemmFamilies : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      skip_reason_ = "no CUDA device on this machine";
      return;
    }
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major != 9 || minor != 0 || !sm90::available()) {
      skip_reason_ = "the wgmma GEMMs need compute capability 9.0 and a build with sm_90a (device has " +
                     std::to_string(major) + "." + std::to_string(minor) + ")";
      return;
    }
    Device& d = dev_;
    auto upload = [](void** p, const std::vector<std::uint16_t>& h) {
      cudaMalloc(p, h.size() * 2);
      cudaMemcpy(*p, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
    };
    upload(&d.temb, random_bf16(std::size_t(kMaxB) * kK, 2.0f, 11));
    upload(&d.weight, random_bf16(std::size_t(kN) * kK, 0.02f, 12));
    upload(&d.bias, random_bf16(kN, 0.02f, 13));
    upload(&d.grad_out, random_bf16(std::size_t(kMaxB) * kN, 1.0f, 14));
    cudaMalloc(&d.out, std::size_t(kMaxB) * kN * 2);
    cudaMalloc(&d.grad_temb, std::size_t(kMaxB) * kK * 2);
    cudaMalloc(&d.grad_weight, std::size_t(kN) * kK * 2);
    cudaMalloc(&d.grad_bias, std::size_t(kN) * 2);
    const Problem p{Storage::bfloat16, kMaxB, kK, kN};
    d.workspace_bytes = std::max(forward_workspace_bytes(p), backward_workspace_bytes(p));
    cudaMalloc(&d.workspace, d.workspace_bytes);
    if (cudaDeviceSynchronize() != cudaSuccess) skip_reason_.clear(), setup_error_ = true;
  }

  static void TearDownTestSuite() {
    for (void* p : {dev_.temb, dev_.weight, dev_.bias, dev_.grad_out, dev_.out, dev_.grad_temb,
                    dev_.grad_weight, dev_.grad_bias, dev_.workspace})
      if (p) cudaFree(p);
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_FALSE(setup_error_) << "device buffers could not be set up";
  }

  // Runs forward and backward with the given choice; returns the four outputs' bytes.
  static std::vector<std::vector<unsigned char>> run(int B, const Bf16Gemms& gemms) {
    const Device& d = dev_;
    const Problem p{Storage::bfloat16, B, kK, kN};
    std::vector<std::vector<unsigned char>> outputs;
    cudaMemset(d.out, 0xFF, std::size_t(B) * kN * 2);
    cudaMemset(d.grad_temb, 0xFF, std::size_t(B) * kK * 2);
    cudaMemset(d.grad_weight, 0xFF, std::size_t(kN) * kK * 2);
    cudaMemset(d.grad_bias, 0xFF, std::size_t(kN) * 2);
    const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
    const BackwardTensors b{d.temb, d.weight, d.grad_out, d.grad_temb, d.grad_weight, d.grad_bias};
    EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr, gemms), cudaSuccess);
    EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, gemms), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (auto [ptr, bytes] : {std::pair{d.out, std::size_t(B) * kN * 2}, std::pair{d.grad_temb, std::size_t(B) * kK * 2},
                              std::pair{d.grad_weight, std::size_t(kN) * kK * 2}, std::pair{d.grad_bias, std::size_t(kN) * 2}}) {
      std::vector<unsigned char> h(bytes);
      cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost);
      outputs.push_back(std::move(h));
    }
    return outputs;
  }

  static inline Device dev_{};
  static inline std::string skip_reason_;
  static inline bool setup_error_ = false;
};

std::size_t differing_elements(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) n += (a[i] != b[i] || a[i + 1] != b[i + 1]);
  return n;
}

std::size_t poison_left(const std::vector<unsigned char>& a) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) n += (a[i] == 0xFF && a[i + 1] == 0xFF);
  return n;
}

TEST_F(Bf16GemmFamilies, EveryImplementationGivesTheBytesOfMmaSyncOnBothSidesOfEachSwitch) {
  const char* names[4] = {"y", "grad_temb", "grad_weight", "grad_bias"};
  const GemmFamily mma = GemmFamily::mma_sync;
  for (int B : {1, 63, 64, 127, 128, 257, 1024, 1025, 2048}) {
    const auto reference = run(B, Bf16Gemms{mma, mma, mma});
    for (std::size_t o = 0; o < reference.size(); ++o)
      ASSERT_EQ(poison_left(reference[o]), 0u) << names[o] << " not fully written at B = " << B;
    const struct {
      const char* name;
      Bf16Gemms gemms;
    } choices[] = {
        {"wgmma narrow, grad_w ping-pong", {GemmFamily::wgmma_narrow, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
        {"wgmma wide, grad_w cooperative", {GemmFamily::wgmma_wide, GemmFamily::wgmma_wide, GemmFamily::wgmma_wide}},
        {"automatic", {}},
    };
    for (const auto& choice : choices) {
      const auto got = run(B, choice.gemms);
      for (std::size_t o = 0; o < got.size(); ++o) {
        EXPECT_EQ(differing_elements(reference[o], got[o]), 0u)
            << names[o] << " at B = " << B << ": " << choice.name << " differs from mma.sync";
      }
    }
  }
}


TEST_F(Bf16GemmFamilies, AChoiceThatDoesNotApplyToAGemmIsRefusedBeforeAnyWrite) {
  const Device& d = dev_;
  const Problem p{Storage::bfloat16, 4, kK, kN};
  cudaMemset(d.out, 0x5A, std::size_t(4) * kN * 2);
  const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
  EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr,
                           Bf16Gemms{GemmFamily::wgmma_pingpong, GemmFamily::automatic, GemmFamily::automatic}),
            cudaErrorInvalidValue);
  const BackwardTensors b{d.temb, d.weight, d.grad_out, d.grad_temb, d.grad_weight, d.grad_bias};
  EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr,
                            Bf16Gemms{GemmFamily::automatic, GemmFamily::automatic, GemmFamily::wgmma_narrow}),
            cudaErrorInvalidValue);
  std::vector<unsigned char> h(std::size_t(4) * kN * 2);
  ASSERT_EQ(cudaMemcpy(h.data(), d.out, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(h.begin(), h.end(), static_cast<unsigned char>(0x5A)), static_cast<long>(h.size()));
}

}  // namespace
