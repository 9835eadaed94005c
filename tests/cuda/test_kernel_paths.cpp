// The CUDA plugin may pick its kernels by B (bf16: mma.sync, or wgmma with a narrow or wide batch
// tile, cooperative or ping-pong, or on 256 x 128 tiles, or the streaming forward up to B = 8;
// fp32: the forward's mma.sync tiles of 8, 16, 64 and 128 batch rows or its wgmma tiles of 8, 16,
// 32, 64 and 128, the backward's d_temb on mma.sync or on wgmma tiles of 8 to 128 batch rows, its
// grad_weight on mma.sync or wgmma) only because every choice gives the same bytes. This checks
// that claim directly on the kernels: each implementation, forced, against one reference
// implementation, byte for byte, for every output, at batch sizes on both sides of each switch
// point; outputs are poisoned before every run. It also checks that the kernels' overlapped
// launches keep the order of the stream they are launched on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "rlk/bfloat16.hpp"

#include "adaln_mod_projection_bf16_stream.hpp"
#include "adaln_mod_projection_fp32_tf32x3.hpp"
#include "adaln_mod_projection_kernels.hpp"
#include "adaln_mod_projection_sm90.hpp"

namespace {

using namespace rlk::cuda::qwenimage;

constexpr int kK = 3072;
constexpr int kN = 18432;
constexpr int kMaxB = 2048;
constexpr int kZeroTailFrom = 16;  // dy rows from here on are zero in `grad_out_zero_tail`

std::size_t elem(Storage s) { return s == Storage::float32 ? 4 : 2; }

// Storage bytes of n values drawn from N(0, stddev^2).
std::vector<unsigned char> random_values(Storage storage, std::size_t n, float stddev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  const std::size_t es = elem(storage);
  std::vector<unsigned char> v(n * es);
  for (std::size_t i = 0; i < n; ++i) {
    const float x = dist(rng);
    if (storage == Storage::float32) {
      std::memcpy(&v[4 * i], &x, 4);
    } else {
      const rlk::bfloat16 b = rlk::to_bfloat16(x);
      std::memcpy(&v[2 * i], &b.bits, 2);
    }
  }
  return v;
}

struct Device {
  void* temb = nullptr;
  void* weight = nullptr;
  void* bias = nullptr;
  void* grad_out = nullptr;
  void* grad_out_zero_tail = nullptr;  // grad_out with rows kZeroTailFrom.. set to zero
  void* out = nullptr;
  void* grad_temb = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

constexpr const char* kNames[4] = {"y", "grad_temb", "grad_weight", "grad_bias"};

std::size_t differing_elements(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b,
                               std::size_t es) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + es <= a.size(); i += es) n += std::memcmp(&a[i], &b[i], es) != 0;
  return n;
}

// Elements still holding the 0xFF poison (a NaN in both dtypes, never a result here).
std::size_t poison_left(const std::vector<unsigned char>& a, std::size_t es) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + es <= a.size(); i += es)
    n += std::all_of(a.begin() + i, a.begin() + i + es, [](unsigned char c) { return c == 0xFF; });
  return n;
}

class KernelPaths : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      skip_reason_ = "no CUDA device on this machine";
      return;
    }
    cudaDeviceGetAttribute(&major_, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor_, cudaDevAttrComputeCapabilityMinor, 0);
    bool ok = true;
    for (Storage s : {Storage::float32, Storage::bfloat16}) {
      Device& d = dev(s);
      const std::size_t es = elem(s);
      const std::uint64_t seed = s == Storage::float32 ? 20 : 10;
      auto upload = [&ok](void** p, const std::vector<unsigned char>& h) {
        ok = ok && cudaMalloc(p, h.size()) == cudaSuccess &&
             cudaMemcpy(*p, h.data(), h.size(), cudaMemcpyHostToDevice) == cudaSuccess;
      };
      upload(&d.temb, random_values(s, std::size_t(kMaxB) * kK, 2.0f, seed + 1));
      upload(&d.weight, random_values(s, std::size_t(kN) * kK, 0.02f, seed + 2));
      upload(&d.bias, random_values(s, kN, 0.02f, seed + 3));
      auto dy = random_values(s, std::size_t(kMaxB) * kN, 1.0f, seed + 4);
      upload(&d.grad_out, dy);
      std::fill(dy.begin() + std::size_t(kZeroTailFrom) * kN * es, dy.end(), 0);
      upload(&d.grad_out_zero_tail, dy);
      for (auto [p, bytes] : {std::pair{&d.out, std::size_t(kMaxB) * kN * es},
                              std::pair{&d.grad_temb, std::size_t(kMaxB) * kK * es},
                              std::pair{&d.grad_weight, std::size_t(kN) * kK * es},
                              std::pair{&d.grad_bias, std::size_t(kN) * es}})
        ok = ok && cudaMalloc(p, bytes) == cudaSuccess;
      const Problem p{s, kMaxB, kK, kN};
      d.workspace_bytes = std::max(forward_workspace_bytes(p), backward_workspace_bytes(p));
      ok = ok && cudaMalloc(&d.workspace, d.workspace_bytes) == cudaSuccess;
    }
    setup_error_ = !ok || cudaDeviceSynchronize() != cudaSuccess;
  }

  static void TearDownTestSuite() {
    for (Storage s : {Storage::float32, Storage::bfloat16}) {
      const Device& d = dev(s);
      for (void* p : {d.temb, d.weight, d.bias, d.grad_out, d.grad_out_zero_tail, d.out, d.grad_temb,
                      d.grad_weight, d.grad_bias, d.workspace})
        if (p) cudaFree(p);
    }
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_FALSE(setup_error_) << "device buffers could not be set up";
  }

  static Device& dev(Storage s) { return s == Storage::float32 ? fp32_ : bf16_; }

  // Empty when the streaming kernels of this dtype fit the device, else why they do not run.
  static std::string streaming_absent_reason(Storage s = Storage::float32) {
    bool fits = false;
    const cudaError_t err = s == Storage::float32 ? tf32x3::fits_current_device(tf32x3::Tile::batch16, &fits)
                                                  : bf16_stream::fits_current_device(&fits);
    if (err != cudaSuccess) return std::string("device query failed: ") + cudaGetErrorString(err);
    return fits ? "" : "the device offers less shared memory per block than the streaming kernels use";
  }

  static bool wgmma_present() { return major_ == 9 && minor_ == 0 && sm90::available(); }
  static std::string wgmma_absent_reason() {
    return "the wgmma GEMMs need compute capability 9.0 and a build with sm_90a (device has " +
           std::to_string(major_) + "." + std::to_string(minor_) + ")";
  }

  using Outputs = std::vector<std::pair<void*, std::size_t>>;

  // The three gradients' buffers (device pointer, bytes) at batch B.
  static Outputs gradients(Storage s, int B) {
    const Device& d = dev(s);
    const std::size_t es = elem(s);
    return {{d.grad_temb, std::size_t(B) * kK * es},
            {d.grad_weight, std::size_t(kN) * kK * es},
            {d.grad_bias, std::size_t(kN) * es}};
  }

  // The outputs' bytes on the host (the caller has synchronized).
  static std::vector<std::vector<unsigned char>> to_host(const Outputs& outputs) {
    std::vector<std::vector<unsigned char>> host;
    for (auto [ptr, bytes] : outputs) {
      std::vector<unsigned char> h(bytes);
      EXPECT_EQ(cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      host.push_back(std::move(h));
    }
    return host;
  }

  // Poisons the outputs (device pointer, bytes), runs `launch`, synchronizes and returns the
  // outputs' bytes.
  template <class Launch>
  static std::vector<std::vector<unsigned char>> bytes_after(const Outputs& outputs, Launch&& launch) {
    for (auto [ptr, bytes] : outputs) cudaMemset(ptr, 0xFF, bytes);
    launch();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return to_host(outputs);
  }

  // The three gradients of `got` fully written and byte-equal to `expected`; `what` says how
  // `got` was produced.
  static void expect_same_gradients(const std::vector<std::vector<unsigned char>>& expected,
                                    const std::vector<std::vector<unsigned char>>& got, Storage s, int B,
                                    const char* what) {
    const std::size_t es = elem(s);
    for (std::size_t o = 0; o < got.size(); ++o) {
      EXPECT_EQ(poison_left(got[o], es), 0u) << kNames[o + 1] << " not fully written, B = " << B;
      EXPECT_EQ(differing_elements(expected[o], got[o], es), 0u)
          << kNames[o + 1] << ", " << (s == Storage::float32 ? "fp32" : "bf16") << " B = " << B << ": " << what;
    }
  }

  // Runs forward and backward with the given choice; returns the four outputs' bytes.
  static std::vector<std::vector<unsigned char>> run(Storage s, int B, const KernelChoice& choice,
                                                     bool zero_tail_dy = false) {
    const Device& d = dev(s);
    const std::size_t es = elem(s);
    const Problem p{s, B, kK, kN};
    const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
    const BackwardTensors b{d.temb, d.weight, zero_tail_dy ? d.grad_out_zero_tail : d.grad_out,
                            d.grad_temb, d.grad_weight, d.grad_bias};
    return bytes_after({{d.out, std::size_t(B) * kN * es},
                        {d.grad_temb, std::size_t(B) * kK * es},
                        {d.grad_weight, std::size_t(kN) * kK * es},
                        {d.grad_bias, std::size_t(kN) * es}},
                       [&] {
                         EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr, choice), cudaSuccess);
                         EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, choice), cudaSuccess);
                       });
  }

  // Forward alone with the given choice; returns y's bytes (poisoned before the run).
  static std::vector<unsigned char> run_forward(Storage s, int B, const KernelChoice& choice) {
    const Device& d = dev(s);
    const Problem p{s, B, kK, kN};
    const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
    return bytes_after({{d.out, std::size_t(B) * kN * elem(s)}}, [&] {
      EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr, choice), cudaSuccess);
    })[0];
  }

  // Backward alone with the given choice; returns grad_temb, grad_weight and grad_bias bytes
  // (poisoned before the run).
  static std::vector<std::vector<unsigned char>> run_backward(Storage s, int B, const KernelChoice& choice) {
    const Device& d = dev(s);
    const Problem p{s, B, kK, kN};
    const BackwardTensors b{d.temb, d.weight, d.grad_out, d.grad_temb, d.grad_weight, d.grad_bias};
    return bytes_after(gradients(s, B), [&] {
      EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, choice), cudaSuccess);
    });
  }

  // The bf16 backward with `streaming` (streaming on) against all-mma.sync at every B from 1 to
  // max_b: all three gradients fully written and byte-equal (`what` names the kernels in play).
  static void expect_bf16_streaming_backward_equals_mma_sync(int max_b, const KernelChoice& streaming,
                                                              const char* what) {
    const GemmFamily mma = GemmFamily::mma_sync;
    for (int B = 1; B <= max_b; ++B) {
      const auto reference = run_backward(Storage::bfloat16, B, KernelChoice{mma, mma, mma, Streaming::off});
      const auto got = run_backward(Storage::bfloat16, B, streaming);
      for (std::size_t o = 0; o < got.size(); ++o) {
        ASSERT_EQ(poison_left(got[o], 2), 0u) << kNames[o + 1] << " not fully written at B = " << B;
        EXPECT_EQ(differing_elements(reference[o], got[o], 2), 0u)
            << kNames[o + 1] << " at B = " << B << ": " << what << " differs from mma.sync";
      }
    }
  }

  // fp32 forward + backward (streaming off) with each choice of `others` against the forward's
  // 144 x 64 mma.sync tiles and the backward's mma.sync kernels at every B of `batches`: all four
  // outputs fully written and byte-equal.
  static void expect_fp32_tilings_give_the_narrow_bytes(std::initializer_list<int> batches,
                                                        const std::vector<std::pair<Fp32TileChoice, const char*>>& others) {
    const Fp32Tiles narrow = Fp32Tiles::narrow;
    for (int B : batches) {
      KernelChoice choice;
      choice.streaming = Streaming::off;
      choice.fp32 = {narrow, narrow, narrow};
      const auto reference = run(Storage::float32, B, choice);
      for (std::size_t o = 0; o < reference.size(); ++o)
        ASSERT_EQ(poison_left(reference[o], 4), 0u) << kNames[o] << " not fully written by the narrow tiles at B = " << B;
      for (const auto& [tiles, name] : others) {
        choice.fp32 = tiles;
        const auto got = run(Storage::float32, B, choice);
        for (std::size_t o = 0; o < got.size(); ++o) {
          ASSERT_EQ(poison_left(got[o], 4), 0u) << kNames[o] << " not fully written by the " << name << " at B = " << B;
          EXPECT_EQ(differing_elements(reference[o], got[o], 4), 0u)
              << kNames[o] << " at B = " << B << ": the " << name << " differ from the mma.sync ones";
        }
      }
    }
  }

  static inline Device fp32_{};
  static inline Device bf16_{};
  static inline int major_ = 0;
  static inline int minor_ = 0;
  static inline std::string skip_reason_;
  static inline bool setup_error_ = false;
};

TEST_F(KernelPaths, EveryBf16GemmGivesTheBytesOfMmaSyncOnBothSidesOfEachSwitch) {
  if (!wgmma_present()) GTEST_SKIP() << wgmma_absent_reason();
  const GemmFamily mma = GemmFamily::mma_sync;
  for (int B : {1, 4, 5, 16, 17, 32, 33, 64, 65, 127, 128, 129, 192, 193, 257, 767, 768, 896, 897, 1023, 1024, 1025, 2048}) {
    const auto reference = run(Storage::bfloat16, B, KernelChoice{mma, mma, mma});
    for (std::size_t o = 0; o < reference.size(); ++o)
      ASSERT_EQ(poison_left(reference[o], 2), 0u) << kNames[o] << " not fully written at B = " << B;
    const struct {
      const char* name;
      KernelChoice choice;
    } choices[] = {
        {"wgmma narrow, grad_w ping-pong", {GemmFamily::wgmma_narrow, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
        {"wgmma wide, grad_w cooperative", {GemmFamily::wgmma_wide, GemmFamily::wgmma_wide, GemmFamily::wgmma_wide}},
        {"wgmma 256 x 128 forward, wide d_temb, grad_w ping-pong",
         {GemmFamily::wgmma_tall, GemmFamily::wgmma_wide, GemmFamily::wgmma_pingpong}},
        {"wgmma 256 x 128 forward, d_temb and grad_w", {GemmFamily::wgmma_tall, GemmFamily::wgmma_tall, GemmFamily::wgmma_tall}},
        {"wgmma swapped forward, narrow d_temb, grad_w ping-pong",
         {GemmFamily::wgmma_swapped, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
        {"wgmma swapped 64-row forward, narrow d_temb, grad_w ping-pong",
         {GemmFamily::wgmma_swapped_narrow, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
        {"wgmma swapped forward, 64-row d_temb, grad_w ping-pong",
         {GemmFamily::wgmma_swapped, GemmFamily::wgmma_medium, GemmFamily::wgmma_pingpong}},
        {"wgmma swapped 64-row forward, 192 x 32 d_temb, grad_w ping-pong",
         {GemmFamily::wgmma_swapped_narrow, GemmFamily::wgmma_tall_narrow, GemmFamily::wgmma_pingpong}},
        {"automatic", {}},
    };
    for (const auto& choice : choices) {
      const auto got = run(Storage::bfloat16, B, choice.choice);
      for (std::size_t o = 0; o < got.size(); ++o) {
        EXPECT_EQ(differing_elements(reference[o], got[o], 2), 0u)
            << kNames[o] << " at B = " << B << ": " << choice.name << " differs from mma.sync";
      }
    }
  }
}

// The fp32 forward's mma.sync tiles come in two tilings (144 x 64 and 128 x 128): the wide ones
// forced, and the automatic choice of every GEMM (wgmma where the sm_90a kernels run), against
// the narrow ones with the backward on mma.sync, at batch sizes on both sides of the switches,
// past a tile's width and at the largest batch.
TEST_F(KernelPaths, Fp32TiledGemmsGiveTheSameBytesWhateverTheirTiles) {
  const Fp32Tiles narrow = Fp32Tiles::narrow, wide = Fp32Tiles::wide;
  const std::vector<std::pair<Fp32TileChoice, const char*>> others = {
      {{wide, narrow, narrow}, "128 x 128 forward tiles"}, {{}, "automatic tiles"}};
  expect_fp32_tilings_give_the_narrow_bytes({9, 17, 64, 65, 129, 300, 511, 512, 2048}, others);
}

// The fp32 backward's GEMMs run on wgmma where the sm_90a kernels run: d_temb in tiles of 8, 16
// or 32 batch rows (64 of W's columns per CTA) up to B = 32, 64 rows up to 192, 128 above;
// grad_weight in 128 x 128 tiles, its stores whole tiles or box by box. Each forced, and the
// automatic choice, against the mma.sync
// kernels of the same chains, at batch sizes on both sides of each tile switch (8 / 9, 16 / 17,
// 32 / 33, 192 / 193), of a grad_weight chunk (32 / 33, 64 / 65), past a tile's edge (300) and at
// the largest batch.
TEST_F(KernelPaths, Fp32WgmmaBackwardGivesTheBytesOfTheMmaSyncKernels) {
  if (!wgmma_present()) GTEST_SKIP() << wgmma_absent_reason();
  const Fp32Tiles narrow = Fp32Tiles::narrow;
  const std::vector<std::pair<Fp32TileChoice, const char*>> others = {
      {{narrow, Fp32Tiles::wgmma_narrow, narrow}, "wgmma 32-row d_temb tiles"},
      {{narrow, Fp32Tiles::wgmma_medium, narrow}, "wgmma 64-row d_temb tiles"},
      {{narrow, Fp32Tiles::wgmma_wide, narrow}, "wgmma 128-row d_temb tiles"},
      {{narrow, narrow, Fp32Tiles::wgmma_wide}, "wgmma grad_weight"},
      {{narrow, narrow, Fp32Tiles::wgmma_wide, sm90::Fp32GradWStores::box_by_box}, "wgmma grad_weight, box-by-box stores"},
      {{}, "automatic kernels"}};
  expect_fp32_tilings_give_the_narrow_bytes({1, 7, 8, 9, 16, 17, 32, 33, 64, 65, 192, 193, 300, 2048}, others);
}

// Where the sm_90a kernels run the fp32 forward runs on wgmma (the contract's chain on m64nNk8
// instructions, W's pieces cut in registers, s's from the workspace), in tiles of 8 and 16 batch rows
// (automatic, up to B = 16) and 32, 64 and 128: each forced, and the automatic choice, against the
// 144 x 64 mma.sync tiles, at batch sizes on both sides of each switch (8 / 9, 16 / 17, 32 / 33,
// 40 / 41, 160 / 161, 192 / 193), on both sides of each tile's edge (a last tile of 1 row at 33, 65,
// 97, 129 and 161, of 44 at 300) and at the largest batch.
TEST_F(KernelPaths, Fp32WgmmaForwardGivesTheBytesOfTheMmaSyncTiles) {
  if (!wgmma_present()) GTEST_SKIP() << wgmma_absent_reason();
  const Fp32Tiles narrow = Fp32Tiles::narrow;
  const std::vector<std::pair<Fp32TileChoice, const char*>> others = {
      {{Fp32Tiles::wgmma_narrow, narrow, narrow}, "wgmma 32-row forward"},
      {{Fp32Tiles::wgmma_medium, narrow, narrow}, "wgmma 64-row forward"},
      {{Fp32Tiles::wgmma_wide, narrow, narrow}, "wgmma 128-row forward"},
      {{}, "automatic tiles"}};
  expect_fp32_tilings_give_the_narrow_bytes(
      {1, 8, 9, 16, 17, 32, 33, 40, 41, 64, 65, 96, 97, 128, 129, 160, 161, 192, 193, 300, 2048}, others);
}

// The fp32 forward's streaming tiles (8 and 16 batch rows, SiLU in the kernel) against the 144 x 64
// tiles at every B they take.
TEST_F(KernelPaths, Fp32StreamingForwardGivesTheBytesOfTheTiledOneAtEveryBatchItTakes) {
  if (const std::string why = streaming_absent_reason(); !why.empty()) GTEST_SKIP() << why;
  for (int B = 1; B <= tf32x3::batch_rows(tf32x3::Tile::batch16); ++B) {
    KernelChoice tiled;
    tiled.streaming = Streaming::off;
    tiled.fp32.forward = Fp32Tiles::narrow;
    KernelChoice streaming;
    streaming.streaming = Streaming::on;
    const auto reference = run_forward(Storage::float32, B, tiled);
    const auto got = run_forward(Storage::float32, B, streaming);
    ASSERT_EQ(poison_left(got, 4), 0u) << "y not fully written at B = " << B;
    EXPECT_EQ(differing_elements(reference, got, 4), 0u)
        << "y at B = " << B << ": the streaming tiles differ from the 144 x 64 ones";
  }
}

TEST_F(KernelPaths, Bf16StreamingForwardGivesTheBytesOfMmaSyncAtEveryBatchItTakes) {
  if (const std::string why = streaming_absent_reason(Storage::bfloat16); !why.empty()) GTEST_SKIP() << why;
  const GemmFamily mma = GemmFamily::mma_sync;
  for (int B = 1; B <= bf16_stream::kMaxB; ++B) {
    const auto reference = run_forward(Storage::bfloat16, B, KernelChoice{mma, mma, mma, Streaming::off});
    const auto got = run_forward(Storage::bfloat16, B, KernelChoice{GemmFamily::automatic, mma, mma, Streaming::on});
    ASSERT_EQ(poison_left(got, 2), 0u) << "y not fully written at B = " << B;
    EXPECT_EQ(differing_elements(reference, got, 2), 0u) << "y at B = " << B << ": the streaming forward differs from mma.sync";
  }
}

// The streaming grad_weight kernel (with grad_temb on mma.sync) against the mma.sync GEMMs, at
// every batch size it takes: all three gradients, since the kernel also writes grad_temb (from
// the d_temb partials) and grad_bias in place of the finish kernel.
TEST_F(KernelPaths, Bf16StreamingGradWeightGivesTheBytesOfMmaSyncAtEveryBatchItTakes) {
  bool fits = false;
  ASSERT_EQ(bf16_stream::grad_weight_fits_current_device(&fits), cudaSuccess);
  if (!fits) GTEST_SKIP() << "the device offers less shared memory per block than the streaming grad_weight uses";
  const GemmFamily mma = GemmFamily::mma_sync;
  expect_bf16_streaming_backward_equals_mma_sync(
      bf16_stream::kGradWMaxB, KernelChoice{mma, mma, GemmFamily::automatic, Streaming::on},
      "the backward with the streaming grad_weight");
  if (HasFatalFailure()) return;
  // Special inputs: the kernel for the smallest B leaves out the GEMM's all-zero second k16 step
  // (B = 3), which must not change an infinity, a NaN or a zero's sign either, nor may its
  // grad_bias and grad_temb; the kernel that streams s (B = 29) must propagate them alike. dy gets
  // +inf, -inf, a NaN and a column of -0 (grad_weight's row 11 and grad_bias[11] then sum signed
  // zeros), temb a -inf (s = NaN, silu' of it NaN).
  const Device& d = dev(Storage::bfloat16);
  auto dy_at = [&](int b, int n) { return static_cast<unsigned char*>(d.grad_out) + 2 * (std::size_t(b) * kN + n); };
  const std::pair<unsigned char*, std::uint16_t> specials[] = {
      {dy_at(0, 5), 0x7F80},  {dy_at(1, 6), 0xFF80},  {dy_at(2, 7), 0x7FC1}, {dy_at(0, 11), 0x8000},
      {dy_at(1, 11), 0x8000}, {dy_at(2, 11), 0x8000}, {static_cast<unsigned char*>(d.temb) + 2 * (1 * kK + 9), 0xFF80}};
  constexpr int kSpecials = sizeof(specials) / sizeof(specials[0]);
  std::uint16_t saved[kSpecials];
  for (int i = 0; i < kSpecials; ++i) {
    ASSERT_EQ(cudaMemcpy(&saved[i], specials[i].first, 2, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(specials[i].first, &specials[i].second, 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  static_assert(bf16_stream::kGradWSmallMaxB < 29 && 29 <= bf16_stream::kGradWMaxB);
  constexpr int kBatches[] = {3, 29};
  constexpr int kCases = sizeof(kBatches) / sizeof(kBatches[0]);
  std::vector<std::vector<unsigned char>> reference[kCases], got[kCases];
  for (int i = 0; i < kCases; ++i) {
    reference[i] = run_backward(Storage::bfloat16, kBatches[i], KernelChoice{mma, mma, mma, Streaming::off});
    got[i] = run_backward(Storage::bfloat16, kBatches[i], KernelChoice{mma, mma, GemmFamily::automatic, Streaming::on});
  }
  for (int i = 0; i < kSpecials; ++i)
    ASSERT_EQ(cudaMemcpy(specials[i].first, &saved[i], 2, cudaMemcpyHostToDevice), cudaSuccess);
  for (int i = 0; i < kCases; ++i) {
    std::size_t nans = 0;
    for (std::size_t e = 0; e + 2 <= reference[i][1].size(); e += 2) {
      const unsigned v = reference[i][1][e] | (reference[i][1][e + 1] << 8);
      nans += (v & 0x7F80u) == 0x7F80u && (v & 0x7Fu) != 0;
    }
    EXPECT_GT(nans, 0u) << "no NaN reached grad_weight at B = " << kBatches[i] << ": the case tests nothing";
    for (std::size_t o = 0; o < got[i].size(); ++o)
      EXPECT_EQ(differing_elements(reference[i][o], got[i][o], 2), 0u)
          << kNames[o + 1] << " with infinities, NaNs and signed zeros in the inputs at B = " << kBatches[i]
          << ": the streaming kernel differs from mma.sync";
  }
}

// The streaming d_temb kernel (with the streaming grad_weight) against the mma.sync GEMMs, at
// every batch size it takes.
TEST_F(KernelPaths, Bf16StreamingDTembGivesTheBytesOfMmaSyncAtEveryBatchItTakes) {
  bool fits = false;
  ASSERT_EQ(bf16_stream::dtemb_fits_current_device(&fits), cudaSuccess);
  if (!fits) GTEST_SKIP() << "the device offers less shared memory per block than the streaming d_temb uses";
  expect_bf16_streaming_backward_equals_mma_sync(
      bf16_stream::kDTembMaxB,
      KernelChoice{GemmFamily::mma_sync, GemmFamily::automatic, GemmFamily::automatic, Streaming::on},
      "the streaming backward");
}

// The bf16 backward reads s = SiLU(temb) from its workspace only after writing it in the same call:
// from CTAs beside the tall-narrow wgmma d_temb (B <= 4 where they fit), from the streaming
// grad_weight itself (B <= 4 elsewhere) or from silu_kernel (larger B). A workspace poisoned with
// NaN before the call, as one holding another call's s would be stale, must change no byte of the
// automatic choice's gradients against all-mma.sync (whose backward runs silu_kernel).
TEST_F(KernelPaths, TheBf16BackwardWritesTheSiluItReadsWhateverTheWorkspaceHeld) {
  const GemmFamily mma = GemmFamily::mma_sync;
  const Device& d = dev(Storage::bfloat16);
  for (int B : {1, 3, 4, 5, 17, 33}) {
    const auto reference = run_backward(Storage::bfloat16, B, KernelChoice{mma, mma, mma, Streaming::off});
    ASSERT_EQ(cudaMemset(d.workspace, 0xFF, d.workspace_bytes), cudaSuccess);
    const auto got = run_backward(Storage::bfloat16, B, KernelChoice{});
    for (std::size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(poison_left(got[o], 2), 0u) << kNames[o + 1] << " not fully written at B = " << B;
      EXPECT_EQ(differing_elements(reference[o], got[o], 2), 0u)
          << kNames[o + 1] << " at B = " << B << ": the automatic backward after a poisoned workspace differs from mma.sync";
    }
  }
}

// Every bf16 wgmma forward tiling (swapped or not) reads s in boxes of a whole tile's batch rows:
// silu_kernel writes the rows from B up to sm90::forward_silu_rows as zeros in the workspace, every
// box is in bounds, and the epilogue stores B rows only. With the workspace and all of y's buffer
// (kMaxB rows) poisoned with NaN before the call, each tiling at batch sizes whose last tile is
// partly past B must give mma.sync's bytes for y's B rows, leave every row of y from B untouched,
// and leave zeros in s's rows from B to whole tiles.
TEST_F(KernelPaths, EveryWgmmaBf16ForwardReadsZeroRowsPastTheBatchAndWritesNone) {
  if (!wgmma_present()) GTEST_SKIP() << wgmma_absent_reason();
  const GemmFamily mma = GemmFamily::mma_sync;
  const Device& d = dev(Storage::bfloat16);
  const std::size_t row_bytes = std::size_t(kN) * 2, s_row_bytes = std::size_t(kK) * 2;
  const struct {
    GemmFamily family;
    sm90::BatchTile tile;
    int tile_rows;
    const char* name;
  } tilings[] = {{GemmFamily::wgmma_swapped, sm90::BatchTile::swapped, 128, "128-row swapped"},
                 {GemmFamily::wgmma_swapped_narrow, sm90::BatchTile::swapped_narrow, 64, "64-row swapped"},
                 {GemmFamily::wgmma_wide, sm90::BatchTile::wide, 128, "128 x 128"},
                 {GemmFamily::wgmma_tall, sm90::BatchTile::tall, 128, "256 x 128"},
                 {GemmFamily::wgmma_narrow, sm90::BatchTile::narrow, 32, "128 x 32"}};
  for (int B : {5, 65, 129, 160, 300, 1100}) {
    const auto reference = run_forward(Storage::bfloat16, B, KernelChoice{mma, mma, mma, Streaming::off});
    for (const auto& tiling : tilings) {
      const int rows = (B + tiling.tile_rows - 1) / tiling.tile_rows * tiling.tile_rows;
      ASSERT_EQ(sm90::forward_silu_rows(tiling.tile, B), rows) << "B = " << B;
      ASSERT_EQ(cudaMemset(d.workspace, 0xFF, d.workspace_bytes), cudaSuccess);
      const auto all = bytes_after({{d.out, std::size_t(kMaxB) * row_bytes}}, [&] {
        const Problem p{Storage::bfloat16, B, kK, kN};
        const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
        EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr,
                                 KernelChoice{tiling.family, mma, mma, Streaming::off}),
                  cudaSuccess);
      })[0];
      const std::vector<unsigned char> head(all.begin(), all.begin() + std::size_t(B) * row_bytes);
      const std::vector<unsigned char> tail(all.begin() + std::size_t(B) * row_bytes, all.end());
      EXPECT_EQ(differing_elements(reference, head, 2), 0u)
          << "y at B = " << B << ": the " << tiling.name << " forward differs from mma.sync";
      EXPECT_EQ(poison_left(tail, 2), tail.size() / 2)
          << "rows of y from B = " << B << " written by the " << tiling.name << " forward";
      const auto pad = to_host({{static_cast<unsigned char*>(d.workspace) + std::size_t(B) * s_row_bytes,
                                 std::size_t(rows - B) * s_row_bytes}})[0];
      EXPECT_TRUE(std::all_of(pad.begin(), pad.end(), [](unsigned char c) { return c == 0; }))
          << "s's rows " << B << " ... " << rows - 1 << " not zero after the " << tiling.name << " forward";
    }
  }
}

// Across the automatic switches (the forward's 8-row streaming tile, then its wgmma tiles, or without
// the sm_90a kernels the 16-row streaming tile and the 144 x 64 tiles; the backward's d_temb tiles of 8, 16, 32, 64 and 128 rows; grad_weight's chunks of
// 32 rows), rows of y and grad_temb keep their bytes, and appending rows whose dy is zero leaves
// grad_weight and grad_bias unchanged.
TEST_F(KernelPaths, Fp32BytesHoldAcrossTheSwitchesFromStreamingToTiled) {
  if (const std::string why = streaming_absent_reason(); !why.empty()) GTEST_SKIP() << why;
  for (auto [small, big] : {std::pair{8, 9}, std::pair{16, 17}, std::pair{32, 33}, std::pair{16, 64},
                            std::pair{192, 193}}) {
    const auto below = run(Storage::float32, small, {}, true);
    const auto above = run(Storage::float32, big, {}, true);
    for (int o : {0, 1}) {
      const std::vector<unsigned char> head(above[o].begin(), above[o].begin() + below[o].size());
      EXPECT_EQ(differing_elements(below[o], head, 4), 0u) << kNames[o] << " rows 0.." << small - 1 << ", B = " << small << " -> " << big;
    }
    if (small < kZeroTailFrom) continue;  // the rows appended are not zero there
    for (int o : {2, 3})
      EXPECT_EQ(differing_elements(below[o], above[o], 4), 0u) << kNames[o] << ", " << small << " -> " << big << " rows";
  }
}

// Every kernel may start while the one before it in the stream is finishing (programmatic
// dependent launch) and waits for it on the device before touching memory. A backward whose dy
// is the output of the forward launched just before it, with no host synchronization between
// them, must give the bytes of the same backward run after a synchronization; the two calls also
// share the workspace (the forward's SiLU buffer is rewritten by the backward). The batch sizes
// cover every kernel family of both dtypes.
TEST_F(KernelPaths, ABackwardLaunchedRightAfterTheForwardReadsWhatTheForwardWrote) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (Storage s : {Storage::float32, Storage::bfloat16}) {
    for (int B : {1, 8, 16, 64, 300}) {
      const Device& d = dev(s);
      const std::size_t es = elem(s);
      const Problem p{s, B, kK, kN};
      const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
      const BackwardTensors b{d.temb, d.weight, d.out, d.grad_temb, d.grad_weight, d.grad_bias};
      const Outputs grads = gradients(s, B);
      auto pass = [&](bool synchronize_between) {
        // Poisoned: a backward that read dy before the forward wrote it would see NaN.
        EXPECT_EQ(cudaMemsetAsync(d.out, 0xFF, std::size_t(B) * kN * es, stream), cudaSuccess);
        for (auto [ptr, bytes] : grads) EXPECT_EQ(cudaMemsetAsync(ptr, 0xFF, bytes, stream), cudaSuccess);
        EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, stream, {}), cudaSuccess);
        if (synchronize_between) EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, stream, {}), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        return to_host(grads);
      };
      const auto chained = pass(false);
      expect_same_gradients(pass(true), chained, s, B,
                            "the backward launched right after the forward differs from the one run after a "
                            "synchronization");
    }
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// The bf16 backward from B = 17 on ends with its finish running beside the grad_weight GEMM, on SMs
// the GEMM leaves free, and that finish waits for the GEMM only at its end. A forward launched
// right after the backward on the same stream and workspace rewrites the SiLU buffer that
// grad_weight reads (from other rows of temb, so with other values); if the grid after the backward
// could start before grad_weight has finished, its bytes would change. Every output of the
// backward must equal that of the same backward run alone. Both dtypes, every bf16 grad_weight
// family of these batch sizes (streaming, ping-pong) and the fp32 paths.
TEST_F(KernelPaths, AForwardLaunchedRightAfterTheBackwardLeavesTheBackwardItsInputs) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (Storage s : {Storage::bfloat16, Storage::float32}) {
    for (int B : {8, 17, 64, 300, 2047}) {
      const Device& d = dev(s);
      const Problem p{s, B, kK, kN};
      // temb rows 1 ... B: another s than the backward's rows 0 ... B - 1
      const ForwardTensors next{static_cast<const unsigned char*>(d.temb) + kK * elem(s), d.weight, d.bias, d.out};
      const BackwardTensors b{d.temb, d.weight, d.grad_out, d.grad_temb, d.grad_weight, d.grad_bias};
      const Outputs grads = gradients(s, B);
      auto pass = [&](bool forward_after) {
        for (auto [ptr, bytes] : grads) EXPECT_EQ(cudaMemsetAsync(ptr, 0xFF, bytes, stream), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, stream, {}), cudaSuccess);
        if (forward_after) EXPECT_EQ(launch_forward(p, next, d.workspace, d.workspace_bytes, stream, {}), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        return to_host(grads);
      };
      const auto alone = pass(false);
      expect_same_gradients(alone, pass(true), s, B,
                            "the backward followed at once by a forward differs from the backward alone");
    }
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(KernelPaths, AChoiceThatDoesNotApplyIsRefusedBeforeAnyWrite) {
  for (Storage s : {Storage::bfloat16, Storage::float32}) {
    if (s == Storage::bfloat16 && !wgmma_present()) continue;  // refused for another reason there
    const Device& d = dev(s);
    const int B = s == Storage::float32 ? tf32x3::batch_rows(tf32x3::Tile::batch16) + 1 : 4;
    const std::size_t bytes = std::size_t(B) * kN * elem(s);
    const Problem p{s, B, kK, kN};
    KernelChoice fwd_choice{GemmFamily::wgmma_pingpong, GemmFamily::automatic, GemmFamily::automatic};
    KernelChoice bwd_choice{GemmFamily::automatic, GemmFamily::automatic, GemmFamily::wgmma_narrow};
    if (s == Storage::float32) {
      fwd_choice = bwd_choice = KernelChoice{};
      fwd_choice.streaming = bwd_choice.streaming = Streaming::on;  // more rows than it takes; none in the backward
    }
    ASSERT_EQ(cudaMemset(d.out, 0x5A, bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(d.grad_weight, 0x5A, std::size_t(kN) * kK * elem(s)), cudaSuccess);
    const ForwardTensors f{d.temb, d.weight, d.bias, d.out};
    EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr, fwd_choice), cudaErrorInvalidValue);
    const BackwardTensors b{d.temb, d.weight, d.grad_out, d.grad_temb, d.grad_weight, d.grad_bias};
    EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, bwd_choice), cudaErrorInvalidValue);
    if (s == Storage::bfloat16) {  // streaming where bf16 has none: B past a kernel's rows, a forced GEMM
      KernelChoice streaming;
      streaming.streaming = Streaming::on;
      const Problem wide{s, bf16_stream::kMaxB + 1, kK, kN};
      const Problem wider{s, bf16_stream::kGradWMaxB + 1, kK, kN};
      EXPECT_EQ(launch_forward(wide, f, d.workspace, d.workspace_bytes, nullptr, streaming), cudaErrorInvalidValue);
      EXPECT_EQ(launch_backward(wider, b, d.workspace, d.workspace_bytes, nullptr, streaming), cudaErrorInvalidValue);
      EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr,
                               KernelChoice{GemmFamily::mma_sync, GemmFamily::automatic, GemmFamily::automatic, Streaming::on}),
                cudaErrorInvalidValue);
      EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr,
                                KernelChoice{GemmFamily::automatic, GemmFamily::automatic, GemmFamily::mma_sync, Streaming::on}),
                cudaErrorInvalidValue);
      // only the forward has the swapped tilings
      for (const GemmFamily swapped : {GemmFamily::wgmma_swapped, GemmFamily::wgmma_swapped_narrow})
        for (const KernelChoice c : {KernelChoice{GemmFamily::automatic, swapped, GemmFamily::automatic},
                                     KernelChoice{GemmFamily::automatic, GemmFamily::automatic, swapped}})
          EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, c), cudaErrorInvalidValue);
      // only d_temb has the 64-row and the 192 x 32 tilings
      for (const GemmFamily dtemb_only : {GemmFamily::wgmma_medium, GemmFamily::wgmma_tall_narrow}) {
        EXPECT_EQ(launch_forward(p, f, d.workspace, d.workspace_bytes, nullptr,
                                 KernelChoice{dtemb_only, GemmFamily::automatic, GemmFamily::automatic}),
                  cudaErrorInvalidValue);
        EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr,
                                  KernelChoice{GemmFamily::automatic, GemmFamily::automatic, dtemb_only}),
                  cudaErrorInvalidValue);
      }
    }
    if (s == Storage::float32) {
      // the mma.sync forward tiles (`wide`) are the forward's; grad_weight's wgmma kernel has one
      // tiling (`wgmma_wide`)
      for (const Fp32TileChoice t : {Fp32TileChoice{Fp32Tiles::automatic, Fp32Tiles::wide, Fp32Tiles::automatic},
                                     Fp32TileChoice{Fp32Tiles::automatic, Fp32Tiles::automatic, Fp32Tiles::wide},
                                     Fp32TileChoice{Fp32Tiles::automatic, Fp32Tiles::automatic, Fp32Tiles::wgmma_narrow},
                                     Fp32TileChoice{Fp32Tiles::automatic, Fp32Tiles::automatic, Fp32Tiles::wgmma_medium}}) {
        KernelChoice c;
        c.fp32 = t;
        EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, c), cudaErrorInvalidValue);
      }
      // store variants are the wgmma grad_weight's, not the mma.sync one's
      {
        KernelChoice c;
        c.fp32 = Fp32TileChoice{Fp32Tiles::automatic, Fp32Tiles::automatic, Fp32Tiles::narrow,
                                sm90::Fp32GradWStores::box_by_box};
        EXPECT_EQ(launch_backward(p, b, d.workspace, d.workspace_bytes, nullptr, c), cudaErrorInvalidValue);
      }
      // the fp32 backward has no streaming kernel, at any B
      KernelChoice streaming;
      streaming.streaming = Streaming::on;
      EXPECT_EQ(launch_backward(Problem{s, 1, kK, kN}, b, d.workspace, d.workspace_bytes, nullptr, streaming),
                cudaErrorInvalidValue);
      // streaming together with a forced tiling is two choices for one GEMM
      for (const Fp32Tiles t : {Fp32Tiles::narrow, Fp32Tiles::wgmma_narrow}) {
        KernelChoice streaming_and_tiles;
        streaming_and_tiles.streaming = Streaming::on;
        streaming_and_tiles.fp32.forward = t;
        EXPECT_EQ(launch_forward(Problem{s, 1, kK, kN}, f, d.workspace, d.workspace_bytes, nullptr, streaming_and_tiles),
                  cudaErrorInvalidValue);
      }
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (auto [ptr, n] : {std::pair{d.out, bytes}, std::pair{d.grad_weight, std::size_t(kN) * kK * elem(s)}}) {
      std::vector<unsigned char> h(n);
      ASSERT_EQ(cudaMemcpy(h.data(), ptr, n, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(std::count(h.begin(), h.end(), static_cast<unsigned char>(0x5A)), static_cast<long>(n));
    }
  }
}

}  // namespace
