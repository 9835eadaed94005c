// How fast do the bf16 GEMMs run alone, with other CUTLASS schedules, tiles and epilogues than
// the library's, and how fast is the library's whole forward and backward with each GEMM family
// forced? Calls are queued on one stream with rotating inputs and outputs (the way `rlk bench`
// issues them), timed as a mean per call and as a per-call median; every variant's bytes are
// compared with the library's choice. Sections (all when none is named): `gradw` (grad_weight
// variants and the write ceiling), `dtemb` (d_temb variants and the streaming d_temb), `forward`
// (the four forward tilings), `op` (launch_forward / launch_backward). It built the switch points of
// the eleventh session (docs/notes/cuda-kernels.md). A kernel-design experiment, not part of the
// library: it compiles the library's sm90 TU into itself to reuse its GEMM template and types.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr
//        -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DCUTLASS_ENABLE_GDC_FOR_SM90 -DNDEBUG
//        -DRLK_WITH_SM90_GEMM -isystem <cutlass include> -I.. gradw_check.cu ../adaln_mod_projection_sm90_fp32.cu
//        ../adaln_mod_projection_sm90_tf32x3.cu <the rlk_cuda_kernels objects> -o gradw_check
#ifndef RLK_WITH_SM90_GEMM
#define RLK_WITH_SM90_GEMM 1
#endif
#include "../adaln_mod_projection_sm90.cu"

#include <cstdio>
#include <cstring>
#include <vector>

#include "adaln_mod_projection_bf16_stream.hpp"
#include "adaln_mod_projection_kernels.hpp"
#include "experiment_common.cuh"

namespace rlk::cuda::qwenimage::sm90 {
namespace {
using PpAuto = GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _128, _64>, Pingpong>;
using Pp64x256 =
    GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_64, _256, _64>, Pingpong, Shape<_64, _128>>;
using Coop128x256 =
    GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _256, _64>, Cooperative, Shape<_128, _128>>;
using Coop256x128 =
    GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_256, _128, _64>, Cooperative, Shape<_128, _128>>;
using Coop128Wide =
    GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _128, _64>, Cooperative, Shape<_128, _128>>;
struct NoSmemPp {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::NoSmemWarpSpecialized;
};
using PpNoSmem = GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _128, _64>, NoSmemPp>;

template <class What>
struct Named {
  const char* name;
  What what;
};
using GradWLaunch = cudaError_t (*)(int, const void*, const void*, void*, cudaStream_t);
const Named<GradWLaunch> kGradWVariants[] = {
    {"pp128x128/e64x128(lib)", gradw_with<GradWPingpong>},
    {"coop128x128/auto(lib)", gradw_with<GradW>},
    {"pp128x128/auto", gradw_with<PpAuto>},
    {"pp64x256/e64x128", gradw_with<Pp64x256>},
    {"coop128x256/e128x128", gradw_with<Coop128x256>},
    {"coop256x128/e128x128", gradw_with<Coop256x128>},
    {"coop128x128/e128x128", gradw_with<Coop128Wide>},
    {"pp128x128/nosmem", gradw_with<PpNoSmem>},
};

using DTemb128x32k128 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _32, _128>>;
using DTembPp128x32 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _32, _64>, Pingpong>;
using DTemb64x32 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_64, _32, _64>, Single>;
using DTemb256x32k128 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_256, _32, _128>>;
using DTemb256x64 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_256, _64, _64>>;
using DTemb128x64k128 = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _64, _128>>;
cudaError_t dtemb_streaming(int B, const void* w, const void* dy, float* partial, cudaStream_t stream) {
  return B <= bf16_stream::kDTembMaxB ? bf16_stream::dtemb_partials(B, w, dy, partial, stream) : cudaErrorInvalidValue;
}
using DTembLaunch = cudaError_t (*)(int, const void*, const void*, float*, cudaStream_t);
const Named<DTembLaunch> kDTembVariants[] = {
    {"coop128x32(lib narrow)", dtemb_with<DTembNarrow>},
    {"coop128x128(lib wide)", dtemb_with<DTembWide>},
    {"coop128x64(lib medium)", dtemb_with<DTembMedium>},
    {"coop128x32/k128", dtemb_with<DTemb128x32k128>},
    {"pp128x32", dtemb_with<DTembPp128x32>},
    {"coop256x32(lib tall-n.)", dtemb_with<DTembTallNarrow>},
    {"single64x32", dtemb_with<DTemb64x32>},
    {"coop256x32/k128", dtemb_with<DTemb256x32k128>},
    {"coop256x64", dtemb_with<DTemb256x64>},
    {"coop128x64/k128", dtemb_with<DTemb128x64k128>},
    {"streaming (lib, B<=8)", dtemb_streaming},
};

const Named<BatchTile> kForwardTiles[] = {{"narrow 128x32", BatchTile::narrow},
                     {"wide 128x128", BatchTile::wide},
                     {"swapped 128x144", BatchTile::swapped},
                     {"swapped 64x144", BatchTile::swapped_narrow}};
}  // namespace
}  // namespace rlk::cuda::qwenimage::sm90

using namespace rlk::cuda::qwenimage::sm90;

__global__ void count_diff(const unsigned short* a, const unsigned short* b, size_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    c += a[i] != b[i];
  if (c) atomicAdd(out, c);
}

// Mean ms per call of `calls` calls queued between two events (after 3 warm-up calls).
template <class F>
double queued_ms(int calls, F&& f) {
  for (int i = 0; i < 3; ++i) f(i);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < calls; ++i) f(i);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float t = 0;
  CK(cudaEventElapsedTime(&t, e0, e1));
  CK(cudaGetLastError());
  return t / calls;
}

constexpr int kSets = 3, kMaxB = 2048;

// One GEMM's section: at each B the first variant's output is the reference; every variant then
// runs on poisoned output, its differing 16-bit words are counted, and its calls are timed queued
// (rotating input sets and outputs) and waited. `run(variant, B, set, out)` launches one call;
// `words(B)` is the output's size in 16-bit words; `outs` are kSets + 1 buffers, the last the
// reference.
template <class Variants, class Run, class Words>
void sweep(const char* title, std::initializer_list<int> batches, const Variants& variants, Run&& run, Words&& words,
           const std::vector<void*>& outs, unsigned long long* diff) {
  std::printf("\n%s, ms (queued mean of 20 | per-call median of 15); diff = 16-bit words that differ from %s\n",
              title, variants[0].name);
  void* ref = outs[kSets];
  for (int B : batches) {
    CK(cudaMemset(ref, 0xff, words(B) * 2));
    CK(run(variants[0], B, 0, ref));
    for (const auto& v : variants) {
      CK(cudaMemset(outs[0], 0xff, words(B) * 2));
      if (const cudaError_t err = run(v, B, 0, outs[0]); err != cudaSuccess) {
        std::printf("B %5d  %-24s refused: %s\n", B, v.name, cudaGetErrorString(err));
        cudaGetLastError();
        continue;
      }
      CK(cudaMemset(diff, 0, sizeof(unsigned long long)));
      count_diff<<<1024, 256>>>(static_cast<const unsigned short*>(ref), static_cast<const unsigned short*>(outs[0]),
                                words(B), diff);
      unsigned long long nd = 0;
      CK(cudaMemcpy(&nd, diff, sizeof nd, cudaMemcpyDeviceToHost));
      auto call = [&](int i) { CK(run(v, B, i % kSets, outs[(i + 1) % kSets])); };
      const double q = queued_ms(20, call);
      const double m = median_ms(3, 15, call);
      std::printf("B %5d  %-24s %.4f | %.4f  diff %llu\n", B, v.name, q, m, nd);
    }
  }
}

int main(int argc, char** argv) {
  auto want = [&](const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (!std::strcmp(argv[i], section)) return true;
    return false;
  };
  const size_t gw_elems = size_t(kN) * kK;
  std::vector<void*> gw(kSets), dy(kSets), s(kSets);
  for (int i = 0; i < kSets; ++i) {
    CK(cudaMalloc(&gw[i], gw_elems * 2));
    CK(cudaMalloc(&dy[i], size_t(kMaxB) * kN * 2));
    CK(cudaMalloc(&s[i], size_t(kMaxB) * kK * 2));
    fill<<<1024, 256>>>(static_cast<unsigned*>(dy[i]), size_t(kMaxB) * kN / 2, 11u + i);
    fill<<<1024, 256>>>(static_cast<unsigned*>(s[i]), size_t(kMaxB) * kK / 2, 97u + i);
  }
  // fill's words as pairs of bf16 of moderate size: sign and mantissa kept, the exponent field
  // forced into 120 ... 127 (|x| in [2^-7, 2)), so no product overflows or is subnormal.
  auto tame = [](void* p, size_t words) {
    std::vector<unsigned> h(words);
    CK(cudaMemcpy(h.data(), p, words * 4, cudaMemcpyDeviceToHost));
    for (auto& w : h) w = (w & 0x807F807Fu) | 0x3C003C00u | ((w >> 3) & 0x03800380u);
    CK(cudaMemcpy(p, h.data(), words * 4, cudaMemcpyHostToDevice));
  };
  for (int i = 0; i < kSets; ++i) {
    tame(dy[i], size_t(kMaxB) * kN / 2);
    tame(s[i], size_t(kMaxB) * kK / 2);
  }
  // Outputs: grad_weight (113 MB bf16), d_temb partials (8 x B x 3072 FP32: 201 MB at B = 2048) and y
  // in kSets rotating buffers and a reference, each as large as the largest.
  const size_t out_bytes = size_t(kSplitN) * kMaxB * kK * 4;
  std::vector<void*> outs(kSets + 1);
  for (void*& o : outs) CK(cudaMalloc(&o, out_bytes));
  unsigned long long* diff = nullptr;
  CK(cudaMalloc(&diff, sizeof(unsigned long long)));

  const double write_ms = queued_ms(20, [&](int i) { write_grid_stride<<<132 * 8, 256>>>(static_cast<uint4*>(gw[i % kSets]), gw_elems * 2 / 16); });
  const double memset_ms = queued_ms(20, [&](int i) { CK(cudaMemsetAsync(gw[i % kSets], 0x5a, gw_elems * 2)); });
  std::printf("write ceiling, 113 MB: 16-byte stores %.4f ms, cudaMemsetAsync %.4f ms (queued, mean of 20)\n",
              write_ms, memset_ms);

  if (want("gradw"))
    sweep("grad_weight GEMM alone", {16, 32, 33, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048}, kGradWVariants,
          [&](const Named<GradWLaunch>& v, int B, int set, void* out) { return v.what(B, dy[set], s[set], out, nullptr); },
          [&](int) { return gw_elems; }, outs, diff);

  // d_temb and the forward read W: gw's buffers, refilled as bf16 weights.
  for (int i = 0; i < kSets; ++i) {
    fill<<<1024, 256>>>(static_cast<unsigned*>(gw[i]), gw_elems / 2, 5u + i);
    tame(gw[i], gw_elems / 2);
  }
  if (want("dtemb"))
    sweep("d_temb GEMM alone (8 slices, FP32 partials)",
          {1, 2, 3, 4, 8, 9, 12, 16, 24, 32, 48, 64, 65, 96, 128, 160, 176, 192, 208, 224, 256}, kDTembVariants,
          [&](const Named<DTembLaunch>& v, int B, int set, void* out) {
            return v.what(B, gw[set], dy[set], static_cast<float*>(out), nullptr);
          },
          [&](int B) { return size_t(kSplitN) * B * kK * 2; }, outs, diff);
  if (want("forward"))  // bias: the first row of another dy buffer
    sweep("forward GEMM alone (s given)", {65, 128, 144, 160, 176, 192, 208, 224, 256}, kForwardTiles,
          [&](const Named<BatchTile>& f, int B, int set, void* out) {
            return forward_gemm(f.what, B, gw[set], s[set], dy[(set + 1) % kSets], out, nullptr);
          },
          [&](int B) { return size_t(B) * kN; }, outs, diff);

  // The library's whole forward and backward (automatic choice, and with one GEMM forced), queued.
  using namespace rlk::cuda::qwenimage;
  void* ws = nullptr;
  Problem prob{Storage::bfloat16, kMaxB};
  const size_t ws_bytes = backward_workspace_bytes(prob);
  CK(cudaMalloc(&ws, ws_bytes));
  struct Choice {
    const char* name;
    KernelChoice c;
  };
  std::vector<Choice> choices = {{"automatic", {}}};
  for (auto [name, f] : {std::pair{"dt narrow", GemmFamily::wgmma_narrow}, std::pair{"dt medium", GemmFamily::wgmma_medium},
                         std::pair{"dt tall-narrow", GemmFamily::wgmma_tall_narrow}}) {
    KernelChoice c;
    c.grad_temb = f;
    choices.push_back({name, c});
  }
  {
    KernelChoice c;
    c.streaming = Streaming::on;
    choices.push_back({"streaming on (streaming d_temb)", c});
    KernelChoice d;
    d.streaming = Streaming::off;
    d.grad_weight = GemmFamily::wgmma_pingpong;
    choices.push_back({"streaming off, gw ping-pong", d});
  }
  std::printf("\nthe library's backward / forward, bf16, ms (queued mean of 20 | per-call median of 15)\n");
  const int op_batches[] = {1, 3, 8, 16, 24, 32, 33, 64, 65, 72, 80, 88, 96, 128, 144, 192, 208, 256, 1024, 2048};
  for (int B : op_batches) {
    if (!want("op")) break;
    prob.B = B;
    for (const Choice& ch : choices) {
      auto bwd = [&](int i) {
        BackwardTensors t{s[i % kSets], gw[i % kSets], dy[i % kSets], outs[0], outs[1], outs[2]};
        return launch_backward(prob, t, ws, ws_bytes, nullptr, ch.c);
      };
      if (bwd(0) != cudaSuccess) {
        cudaGetLastError();
        std::printf("B %4d  bwd %-28s refused\n", B, ch.name);
        continue;
      }
      const double q = queued_ms(20, [&](int i) { CK(bwd(i)); });
      const double m = median_ms(3, 15, [&](int i) { CK(bwd(i)); });
      std::printf("B %4d  bwd %-28s %.4f | %.4f\n", B, ch.name, q, m);
    }
    auto fwd = [&](int i) {
      ForwardTensors t{s[i % kSets], gw[i % kSets], dy[(i + 1) % kSets], outs[(i + 1) % kSets]};
      CK(launch_forward(prob, t, ws, ws_bytes, nullptr));
    };
    const double q = queued_ms(20, fwd);
    const double m = median_ms(3, 15, fwd);
    std::printf("B %4d  fwd %-28s %.4f | %.4f\n", B, "automatic", q, m);
  }
  return 0;
}
