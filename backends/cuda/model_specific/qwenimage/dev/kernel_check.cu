// Dev harness for the qwenimage_adaln_mod_projection CUDA kernels: accuracy against an FP64
// GPU oracle, raw-byte batch invariance, zero-row appends, determinism, NaN propagation, the
// strict-math probe, and timings next to a plain cuBLAS baseline.
// Usage: kernel_check [--probe-only | --profile | --timing-only] [--bf16-only | --fp32-only]
//                     [--compare-gemms] [--gemms mma|narrow|wide|swapped|swapped-narrow|automatic]
//                     [--fp32-tc-backward [--fp32-tc-dtemb mma|narrow|medium|wide]]
//   --fp32-tc-backward: the fp32 backward's kernels compared byte for byte and timed one by one.
//   --timing-only: no checks, timings for B <= 64 only.
//   --profile: fwd+bwd at B = 1, 256 and 2048 only (after the accuracy check), then at B = 1 with
//              the streaming kernels off, for a kernel profiler.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "adaln_mod_projection_fp32_tf32x3.hpp"
#include "adaln_mod_projection_kernels.hpp"
#include "adaln_mod_projection_sm90.hpp"

using namespace rlk::cuda::qwenimage;

namespace {

constexpr int K = 3072;
constexpr int N = 18432;
constexpr int BMAX = 2048;
constexpr int kSets = 3;
// --gemms mma|narrow|wide|swapped|swapped-narrow|automatic forces the bf16 GEMM family for every
// check; --compare-gemms compares the implementations byte for byte and times each (bf16 GEMM
// families; fp32 tiled and streaming kernels).
KernelChoice g_choice{};
// The bf16 GEMM families (forward, grad_temb, grad_weight) by their --gemms name; --compare-gemms
// compares each but the first, and the automatic choice, with the first.
struct NamedFamilies {
  const char* flag;
  const char* name;
  KernelChoice choice;
};
const NamedFamilies kBf16Families[] = {
    {"mma", "mma.sync", {GemmFamily::mma_sync, GemmFamily::mma_sync, GemmFamily::mma_sync}},
    {"narrow", "wgmma narrow + grad_w ping-pong",
     {GemmFamily::wgmma_narrow, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
    {"wide", "wgmma wide", {GemmFamily::wgmma_wide, GemmFamily::wgmma_wide, GemmFamily::wgmma_wide}},
    {"swapped", "wgmma swapped forward",
     {GemmFamily::wgmma_swapped, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
    {"swapped-narrow", "wgmma swapped 64-row forward",
     {GemmFamily::wgmma_swapped_narrow, GemmFamily::wgmma_narrow, GemmFamily::wgmma_pingpong}},
    {"medium", "wgmma 64-row d_temb", {GemmFamily::wgmma_swapped, GemmFamily::wgmma_medium, GemmFamily::wgmma_pingpong}},
    {"tall-narrow", "wgmma 192 x 32 d_temb",
     {GemmFamily::wgmma_swapped_narrow, GemmFamily::wgmma_tall_narrow, GemmFamily::wgmma_pingpong}},
    {"automatic", "automatic", {}},
};
bool g_compare = false;
bool g_timing_only = false;

int g_failures = 0;

void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error %s at line %d: %s\n", cudaGetErrorString(e), line, what);
    std::exit(1);
  }
}
void check(cublasStatus_t e, const char* what, int line) {
  if (e != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cuBLAS error %d at line %d: %s\n", static_cast<int>(e), line, what);
    std::exit(1);
  }
}
#define CK(x) check((x), #x, __LINE__)

void report(bool ok, const std::string& what) {
  std::printf("[%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

// ---------------------------------------------------------------- device helpers (harness)
__device__ std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_normal(float* out, std::size_t n, std::uint64_t seed, float sigma) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix64(seed * 0x100000001b3ull + i);
    const double u1 = (double((h >> 11) & ((1ull << 26) - 1)) + 0.5) / double(1ull << 26);
    const double u2 = double(h >> 38) / double(1ull << 26);
    out[i] = float(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
}

template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <class T>
__device__ double to_double(T v);
template <>
__device__ double to_double<float>(float v) { return v; }
template <>
__device__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__global__ void convert_from_float(const float* in, T* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

template <class T>
__global__ void convert_to_double(const T* in, double* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = to_double<T>(in[i]);
}

// Oracle SiLU: FP64, then rounded to the storage dtype as the contract says.
template <class T>
__global__ void silu_oracle(const double* x, double* s, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double v = x[i] / (1.0 + std::exp(-x[i]));
    s[i] = to_double<T>(from_float<T>(float(v)));
  }
}

__global__ void dsilu_apply(const double* x, double* g, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double sig = 1.0 / (1.0 + std::exp(-x[i]));
    g[i] *= sig * (1.0 + x[i] * (1.0 - sig));
  }
}

__global__ void add_bias(double* y, const double* bias, int rows, int cols) {
  const std::size_t n = std::size_t(rows) * cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % cols];
}

__global__ void col_sum(const double* dy, double* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double s = 0.0;
  for (int r = 0; r < rows; ++r) s += dy[std::size_t(r) * cols + c];
  out[c] = s;
}

// FP64 C[m, c] = sum_r A(m, r) * Bm(c, r) with arbitrary strides; 64x64 tiles, 4x4 per thread.
__global__ void dgemm(double* C, int M, int Cn, int R, const double* A, std::int64_t sam,
                      std::int64_t sar, const double* Bm, std::int64_t sbc, std::int64_t sbr) {
  __shared__ double sa[16][64];
  __shared__ double sb[16][64];
  const int m0 = blockIdx.y * 64;
  const int c0 = blockIdx.x * 64;
  const int tx = threadIdx.x % 16;
  const int ty = threadIdx.x / 16;
  double acc[4][4] = {};
  for (int r0 = 0; r0 < R; r0 += 16) {
    for (int e = threadIdx.x; e < 16 * 64; e += 256) {
      int r, i;
      if (sar == 1) {  // r fastest in memory: walk r fastest across threads
        r = e % 16;
        i = e / 16;
      } else {
        i = e % 64;
        r = e / 64;
      }
      const int m = m0 + i;
      const int c = c0 + i;
      sa[r][i] = (m < M && r0 + r < R) ? A[m * sam + (r0 + r) * sar] : 0.0;
      sb[r][i] = (c < Cn && r0 + r < R) ? Bm[c * sbc + (r0 + r) * sbr] : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      double a[4], b[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        a[q] = sa[r][ty * 4 + q];
        b[q] = sb[r][tx * 4 + q];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i;
      const int c = c0 + tx * 4 + j;
      if (m < M && c < Cn) C[std::size_t(m) * Cn + c] = acc[i][j];
    }
}

// counters[0]: elements failing |x - ref| <= atol + rtol |ref| (NaN fails);
// counters[1]: max of |x - ref| / (atol + rtol |ref|) as double bits (non-negative, so ordered).
template <class T>
__global__ void compare(const T* x, const double* ref, std::size_t n, double atol, double rtol,
                        unsigned long long* counters) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double v = to_double<T>(x[i]);
    const double tol = atol + rtol * std::fabs(ref[i]);
    const double err = std::fabs(v - ref[i]);
    if (!(err <= tol)) atomicAdd(&counters[0], 1ull);
    const double ratio = err / tol;
    if (ratio == ratio) {
      atomicMax(&counters[1], static_cast<unsigned long long>(__double_as_longlong(ratio)));
    }
  }
}

// dst row i = src row idx[i], or zeros where idx[i] < 0.
template <class T>
__global__ void gather_rows(T* dst, const T* src, const int* idx, int rows, int width) {
  const std::size_t n = std::size_t(rows) * width;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < n;
       e += std::size_t(gridDim.x) * blockDim.x) {
    const int r = int(e / width);
    const int c = int(e % width);
    dst[e] = idx[r] < 0 ? from_float<T>(0.0f) : src[std::size_t(idx[r]) * width + c];
  }
}

constexpr int kGrid = 2048;

// ---------------------------------------------------------------- per-dtype state
struct Buffers {
  void* temb[kSets];
  void* w[kSets];
  void* bias[kSets];
  void* dy[kSets];
  void* out;
  void* gtemb;
  void* gw;
  void* gb;
  void* work_temb;
  void* work_dy;
  void* ws;
  std::size_t ws_bytes;
};

template <class T>
constexpr Storage storage_of() {
  return sizeof(T) == 4 ? Storage::float32 : Storage::bfloat16;
}

template <class T>
void run_fwd(const Buffers& b, int B, const void* temb, const void* w, const void* bias,
             cudaStream_t st) {
  Problem p{storage_of<T>(), B, K, N};
  ForwardTensors t{temb, w, bias, b.out};
  CK(launch_forward(p, t, b.ws, b.ws_bytes, st, g_choice));
}

// --fp32-tc-backward: the fp32 backward's kernels compared byte for byte and timed alone; with
// --fp32-tc-dtemb narrow|medium|wide every fp32 backward of the checks and timings forces that d_temb
// tile, with --fp32-tc-dtemb mma both GEMMs on mma.sync. The fp32 backward has no streaming kernel:
// a call's `streaming` applies to its forward only.
bool g_fp32_tc = false;
Fp32TileChoice g_fp32_tc_choice{};

cudaError_t backward_call(const Problem& p, const BackwardTensors& t, void* ws, std::size_t ws_bytes, cudaStream_t st,
                          const KernelChoice& choice) {
  KernelChoice c = choice;
  if (p.storage == Storage::float32) {
    c.streaming = Streaming::automatic;
    if (g_fp32_tc_choice.grad_temb != Fp32Tiles::automatic || g_fp32_tc_choice.grad_weight != Fp32Tiles::automatic) {
      c.fp32.grad_temb = g_fp32_tc_choice.grad_temb;
      c.fp32.grad_weight = g_fp32_tc_choice.grad_weight;
    }
  }
  return launch_backward(p, t, ws, ws_bytes, st, c);
}

template <class T>
void run_bwd(const Buffers& b, int B, const void* temb, const void* w, const void* dy,
             cudaStream_t st) {
  Problem p{storage_of<T>(), B, K, N};
  BackwardTensors t{temb, w, dy, b.gtemb, b.gw, b.gb};
  CK(backward_call(p, t, b.ws, b.ws_bytes, st, g_choice));
}

template <class T>
void poison(const Buffers& b) {
  CK(cudaMemset(b.out, 0xff, sizeof(T) * std::size_t(BMAX) * N));
  CK(cudaMemset(b.gtemb, 0xff, sizeof(T) * std::size_t(BMAX) * K));
  CK(cudaMemset(b.gw, 0xff, sizeof(T) * std::size_t(N) * K));
  CK(cudaMemset(b.gb, 0xff, sizeof(T) * std::size_t(N)));
}

template <class T>
std::vector<unsigned char> to_host(const void* p, std::size_t elems) {
  std::vector<unsigned char> h(elems * sizeof(T));
  CK(cudaMemcpy(h.data(), p, h.size(), cudaMemcpyDeviceToHost));
  return h;
}

template <class T>
void compare_out(const char* name, const void* x, const double* ref, std::size_t n, double atol,
                 double rtol, unsigned long long* counters) {
  CK(cudaMemset(counters, 0, 16));
  compare<T><<<kGrid, 256>>>(static_cast<const T*>(x), ref, n, atol, rtol, counters);
  CK(cudaGetLastError());
  unsigned long long h[2];
  CK(cudaMemcpy(h, counters, 16, cudaMemcpyDeviceToHost));
  double ratio;
  std::memcpy(&ratio, &h[1], 8);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s accuracy: %llu / %zu outside tol, max err/tol %.3g",
                sizeof(T) == 4 ? "fp32" : "bf16", name, h[0], n, ratio);
  report(h[0] == 0, buf);
}

// How many bf16 families the per-GEMM timing table has for the forward and for d_temb.
constexpr int kFamiliesPerGemm = 5;

struct Timing {
  int B;
  double fwd, fwdbwd, cub_fwd, cub_fwdbwd;
  // forward: kFwdFamilies; d_temb: kDTembFamilies
  double gemm_fwd[kFamiliesPerGemm] = {}, gemm_bwd_dt[kFamiliesPerGemm] = {}, gemm_bwd_gw = 0, gemm_bwd_gw_pp = 0;
  // streaming off, on: fp32 B <= 16 forward and forward + backward; bf16 forward (B <= 8) and
  // backward alone (B <= 16, the streaming grad_weight)
  double stream_fwd[2] = {}, stream_fwdbwd[2] = {}, stream_bwd[2] = {};
  // fp32 tiled GEMMs, narrow / wide: forward alone (the tensor-core 144 x 64 / 128 x 128 tiles);
  // backward with grad_temb varied (grad_weight narrow); backward with grad_weight varied (grad_temb
  // narrow). f32_fwd_wgmma: the forward alone on the wgmma kernel, 32 / 64 / 128 batch rows per tile.
  double f32_fwd[2] = {}, f32_bwd_dt[2] = {}, f32_bwd_gw[2] = {}, f32_fwd_wgmma[3] = {};
  // --fp32-tc-backward: the whole backward; d_temb alone on wgmma (32 / 64 / 128 batch rows);
  // grad_weight alone on wgmma; d_temb and grad_weight alone on mma.sync
  double tc_bwd = 0, tc_dtemb[5] = {}, tc_gradw = 0, tc_gradw_boxes = 0, memset_gw = 0, tc_mma[2] = {};
  double tc_pair[2] = {};  // d_temb (128 rows) then grad_weight, whole-tile / box-by-box stores, queued together
  // the operator's backward with grad_weight's whole-tile / box-by-box stores, timed in turn twice:
  // whole, box, whole, box
  double tc_bwd_stores[4] = {};
};

constexpr Fp32Tiles kFp32Tiles[2] = {Fp32Tiles::narrow, Fp32Tiles::wide};
constexpr Fp32Tiles kFp32BwdTiles[2] = {Fp32Tiles::narrow, Fp32Tiles::wgmma_wide};  // mma.sync, wgmma
// The bf16 families each GEMM has, in the order of the per-GEMM timing table.
constexpr GemmFamily kFwdFamilies[kFamiliesPerGemm] = {GemmFamily::mma_sync, GemmFamily::wgmma_narrow, GemmFamily::wgmma_wide,
                                        GemmFamily::wgmma_swapped, GemmFamily::wgmma_swapped_narrow};
constexpr GemmFamily kDTembFamilies[kFamiliesPerGemm] = {GemmFamily::mma_sync, GemmFamily::wgmma_narrow, GemmFamily::wgmma_medium,
                                          GemmFamily::wgmma_tall_narrow, GemmFamily::wgmma_wide};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Forward + backward at B with g_choice on poisoned outputs; the four outputs' bytes
// (y, grad_temb, grad_weight, grad_bias).
template <class T>
std::array<std::vector<unsigned char>, 4> outputs_of(Buffers& b, int B) {
  poison<T>(b);
  run_fwd<T>(b, B, b.temb[0], b.w[0], b.bias[0], 0);
  run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
  CK(cudaDeviceSynchronize());
  return {to_host<T>(b.out, std::size_t(B) * N), to_host<T>(b.gtemb, std::size_t(B) * K),
          to_host<T>(b.gw, std::size_t(N) * K), to_host<T>(b.gb, N)};
}

// Elements of T whose bytes differ.
template <class T>
std::size_t differing(const std::vector<unsigned char>& x, const std::vector<unsigned char>& y) {
  std::size_t diff = 0;
  for (std::size_t i = 0; i < x.size(); i += sizeof(T)) diff += std::memcmp(&x[i], &y[i], sizeof(T)) != 0;
  return diff;
}

constexpr const char* kOutputNames[4] = {"y", "grad_temb", "grad_weight", "grad_bias"};

// Timing: median of 25 after 3 warm-ups, rotating kSets input sets; with --timing-only only
// the batch sizes the streaming kernels take.
template <class T>
void time_all(cublasHandle_t handle, Buffers& b, std::vector<Timing>& timings) {
  const bool f32 = sizeof(T) == 4;
  {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const cudaDataType dt = f32 ? CUDA_R_32F : CUDA_R_16BF;
    const float one = 1.0f, zero = 0.0f;
    // cuBLAS computes on the same SiLU buffer our workspace holds (its contents do not matter
    // for timing); column-major views of the row-major tensors.
    auto cub_fwd = [&](int B, int s) {
      CK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, B, K, &one, b.w[s], dt, K, b.temb[s], dt, K,
                      &zero, b.out, dt, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto cub_bwd = [&](int B, int s) {
      CK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, K, B, N, &one, b.w[s], dt, K, b.dy[s], dt, N,
                      &zero, b.gtemb, dt, K, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      CK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, K, N, B, &one, b.temb[s], dt, K, b.dy[s], dt, N,
                      &zero, b.gw, dt, K, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto time_it = [&](auto&& fn) {
      std::vector<float> ms;
      for (int it = 0; it < 28; ++it) {
        const int s = it % kSets;
        CK(cudaEventRecord(e0, 0));
        fn(s);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (it >= 3) ms.push_back(t);
      }
      return median(ms);
    };
    for (int B : {1, 3, 8, 16, 17, 20, 24, 32, 33, 40, 48, 56, 64, 65, 72, 80, 88, 96, 128, 144, 160, 176, 192, 208, 256, 384, 512,
                  1024, 2048}) {
      if (g_timing_only && B > 64) break;  // the batch sizes where the small-B kernels matter
      Timing t{B, 0, 0, 0, 0};
      t.fwd = time_it([&](int s) { run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0); });
      t.fwdbwd = time_it([&](int s) {
        run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0);
        run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0);
      });
      if (g_compare && B <= 16) {
        // fp32: forward and backward streaming; bf16: the forward (B <= 8) and grad_weight.
        const KernelChoice saved = g_choice;
        for (int f = 0; f < 2; ++f) {
          g_choice.streaming = f == 0 ? Streaming::off : Streaming::on;
          if (f32 || B <= 8)
            t.stream_fwd[f] = time_it([&](int s) { run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0); });
          if (f32)
            t.stream_fwdbwd[f] = time_it([&](int s) {
              run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0);
              run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0);
            });
          else
            t.stream_bwd[f] = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        }
        g_choice = saved;
      }
      if (f32 && g_compare && B > 16) {  // where the tiled GEMMs run
        const KernelChoice saved = g_choice;
        const Fp32Tiles narrow = Fp32Tiles::narrow;
        for (int f = 0; f < 2; ++f) {
          g_choice.streaming = Streaming::off;
          g_choice.fp32 = Fp32TileChoice{kFp32Tiles[f], narrow, narrow};
          t.f32_fwd[f] = time_it([&](int s) { run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0); });
          g_choice.fp32 = Fp32TileChoice{narrow, kFp32BwdTiles[f], narrow};
          t.f32_bwd_dt[f] = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
          g_choice.fp32 = Fp32TileChoice{narrow, narrow, kFp32BwdTiles[f]};
          t.f32_bwd_gw[f] = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        }
        g_choice = saved;
      }
      if (f32 && g_compare) {  // the wgmma forward at every B (the automatic choice takes it from B = 17)
        const KernelChoice saved = g_choice;
        const Fp32Tiles tile[3] = {Fp32Tiles::wgmma_narrow, Fp32Tiles::wgmma_medium, Fp32Tiles::wgmma_wide};
        for (int f = 0; f < 3; ++f) {
          g_choice.streaming = Streaming::off;
          g_choice.fp32 = Fp32TileChoice{tile[f], Fp32Tiles::narrow, Fp32Tiles::narrow};
          t.f32_fwd_wgmma[f] = time_it([&](int s) { run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0); });
        }
        g_choice = saved;
      }
      if (f32 && g_fp32_tc) {  // the tensor-core backward's GEMMs alone (operand values do not matter here)
        const float* w = static_cast<const float*>(b.w[0]);
        const float* dy = static_cast<const float*>(b.dy[0]);
        const float* pieces = static_cast<const float*>(b.work_temb);  // [3072, ld] >= [B, 3072]
        float* partial = static_cast<float*>(b.ws);
        const int ld = (B + 31) / 32 * 32;
        const sm90::Fp32WgmmaTile tiles[5] = {sm90::Fp32WgmmaTile::batch8, sm90::Fp32WgmmaTile::batch16,
                                              sm90::Fp32WgmmaTile::batch32, sm90::Fp32WgmmaTile::batch64,
                                              sm90::Fp32WgmmaTile::batch128};
        for (int f = 0; f < 5; ++f)
          t.tc_dtemb[f] = time_it([&](int) { CK(sm90::fp32_dtemb_wgmma(tiles[f], B, dy, dy, w, partial, 0)); });
        constexpr auto kWhole = sm90::Fp32GradWStores::whole_tile, kBoxes = sm90::Fp32GradWStores::box_by_box;
        t.tc_gradw = time_it([&](int) {
          CK(sm90::fp32_grad_weight_wgmma(B, ld, dy, pieces, pieces, static_cast<float*>(b.gw), 0, {}, kWhole));
        });
        {  // the two store variants (automatic is whole_tile): the same bytes, and each one's time
          const std::size_t gw_bytes = std::size_t(N) * K * sizeof(float);
          std::vector<unsigned char> want(gw_bytes), got(gw_bytes);
          CK(sm90::fp32_grad_weight_wgmma(B, ld, dy, pieces, pieces, static_cast<float*>(b.gw), 0, {}, kWhole));
          CK(cudaMemcpy(want.data(), b.gw, gw_bytes, cudaMemcpyDeviceToHost));
          CK(cudaMemset(b.gw, 0x7f, gw_bytes));
          CK(sm90::fp32_grad_weight_wgmma(B, ld, dy, pieces, pieces, static_cast<float*>(b.gw), 0, {}, kBoxes));
          CK(cudaMemcpy(got.data(), b.gw, gw_bytes, cudaMemcpyDeviceToHost));
          report(std::memcmp(want.data(), got.data(), gw_bytes) == 0,
                 "fp32 grad_weight wgmma, box-by-box TMA stores: the whole-tile stores' bytes (B=" + std::to_string(B) + ")");
          t.tc_gradw_boxes = time_it([&](int) {
            CK(sm90::fp32_grad_weight_wgmma(B, ld, dy, pieces, pieces, static_cast<float*>(b.gw), 0, {}, kBoxes));
          });
          // The two GEMMs in sequence, as the backward runs them: whether a store variant's gain alone
          // survives next to d_temb.
          for (int v = 0; v < 2; ++v)
            t.tc_pair[v] = time_it([&](int) {
              CK(sm90::fp32_dtemb_wgmma(sm90::Fp32WgmmaTile::batch128, B, dy, dy, w, partial, 0));
              CK(sm90::fp32_grad_weight_wgmma(B, ld, dy, pieces, pieces, static_cast<float*>(b.gw), 0, {},
                                              v == 0 ? kWhole : kBoxes));
            });
        }

        if (timings.empty())  // the same for every B: once, at the first
          t.memset_gw = time_it([&](int) { CK(cudaMemsetAsync(b.gw, 0x3f, std::size_t(N) * K * sizeof(float), 0)); });
        t.tc_mma[0] = time_it([&](int) { CK(tf32x3::dtemb_partials(B, w, dy, partial, 0)); });
        t.tc_mma[1] = time_it([&](int) { CK(tf32x3::grad_weight(B, dy, pieces, static_cast<float*>(b.gw), 0)); });
        t.tc_bwd = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        {  // the operator's backward with each store variant: the same outputs, and each one's time
          const KernelChoice saved = g_choice;
          constexpr sm90::Fp32GradWStores kStores[2] = {sm90::Fp32GradWStores::whole_tile,
                                                        sm90::Fp32GradWStores::box_by_box};
          std::array<std::vector<unsigned char>, 4> outs[2];
          for (int v = 0; v < 2; ++v) {
            g_choice.fp32.grad_weight_stores = kStores[v];
            outs[v] = outputs_of<T>(b, B);
          }
          report(outs[0] == outs[1], "fp32 backward, grad_weight's box-by-box stores: the whole-tile stores' outputs (B=" +
                                         std::to_string(B) + ")");
          for (int i = 0; i < 4; ++i) {
            g_choice.fp32.grad_weight_stores = kStores[i % 2];
            t.tc_bwd_stores[i] = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
          }
          g_choice = saved;
        }
      }
      if (!f32 && g_compare) {
        // Each GEMM alone: forward with each implementation; backward with one GEMM varied
        // and the other on mma.sync.
        const KernelChoice saved = g_choice;
        for (int f = 0; f < kFamiliesPerGemm; ++f) {
          g_choice = KernelChoice{kFwdFamilies[f], GemmFamily::mma_sync, GemmFamily::mma_sync};
          t.gemm_fwd[f] = time_it([&](int s) { run_fwd<T>(b, B, b.temb[s], b.w[s], b.bias[s], 0); });
          g_choice = KernelChoice{GemmFamily::mma_sync, kDTembFamilies[f], GemmFamily::mma_sync};
          t.gemm_bwd_dt[f] = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        }
        g_choice = KernelChoice{GemmFamily::mma_sync, GemmFamily::mma_sync, GemmFamily::wgmma_wide};
        t.gemm_bwd_gw = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        g_choice = KernelChoice{GemmFamily::mma_sync, GemmFamily::mma_sync, GemmFamily::wgmma_pingpong};
        t.gemm_bwd_gw_pp = time_it([&](int s) { run_bwd<T>(b, B, b.temb[s], b.w[s], b.dy[s], 0); });
        g_choice = saved;
      }
      t.cub_fwd = time_it([&](int s) { cub_fwd(B, s); });
      t.cub_fwdbwd = time_it([&](int s) {
        cub_fwd(B, s);
        cub_bwd(B, s);
      });
      timings.push_back(t);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }

}

template <class T>
void run_dtype(cublasHandle_t handle, std::vector<Timing>& timings, bool profile_only) {
  const bool f32 = sizeof(T) == 4;
  const char* tn = f32 ? "fp32" : "bf16";
  const double atol = f32 ? 1e-4 : 5e-3;
  const double rtol = f32 ? 1e-4 : 1.0 / 128.0;
  const std::size_t nt = std::size_t(BMAX) * K, nw = std::size_t(N) * K, ny = std::size_t(BMAX) * N;

  Buffers b{};
  float* tmp;
  CK(cudaMalloc(&tmp, sizeof(float) * nw));
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&b.temb[s], sizeof(T) * nt));
    CK(cudaMalloc(&b.w[s], sizeof(T) * nw));
    CK(cudaMalloc(&b.bias[s], sizeof(T) * N));
    CK(cudaMalloc(&b.dy[s], sizeof(T) * ny));
    const std::uint64_t seed = 1000 * (s + 1) + (f32 ? 0 : 500);
    fill_normal<<<kGrid, 256>>>(tmp, nt, seed + 1, 2.0f);
    convert_from_float<T><<<kGrid, 256>>>(tmp, static_cast<T*>(b.temb[s]), nt);
    fill_normal<<<kGrid, 256>>>(tmp, nw, seed + 2, 0.02f);
    convert_from_float<T><<<kGrid, 256>>>(tmp, static_cast<T*>(b.w[s]), nw);
    fill_normal<<<kGrid, 256>>>(tmp, N, seed + 3, 0.02f);
    convert_from_float<T><<<kGrid, 256>>>(tmp, static_cast<T*>(b.bias[s]), N);
    fill_normal<<<kGrid, 256>>>(tmp, ny, seed + 4, 1.0f);
    convert_from_float<T><<<kGrid, 256>>>(tmp, static_cast<T*>(b.dy[s]), ny);
    CK(cudaGetLastError());
  }
  CK(cudaFree(tmp));
  CK(cudaMalloc(&b.out, sizeof(T) * ny));
  CK(cudaMalloc(&b.gtemb, sizeof(T) * nt));
  CK(cudaMalloc(&b.gw, sizeof(T) * nw));
  CK(cudaMalloc(&b.gb, sizeof(T) * N));
  CK(cudaMalloc(&b.work_temb, sizeof(T) * nt));
  CK(cudaMalloc(&b.work_dy, sizeof(T) * ny));
  {
    Problem p{storage_of<T>(), BMAX, K, N};
    b.ws_bytes = std::max(forward_workspace_bytes(p), backward_workspace_bytes(p));
    CK(cudaMalloc(&b.ws, b.ws_bytes));
    std::printf("%s workspace at B=%d: forward %zu bytes, backward %zu bytes\n", tn, BMAX,
                forward_workspace_bytes(p), backward_workspace_bytes(p));
    Problem bad{storage_of<T>(), 4, 3000, N};
    ForwardTensors ft{b.temb[0], b.w[0], b.bias[0], b.out};
    report(launch_forward(bad, ft, b.ws, b.ws_bytes, 0) == cudaErrorInvalidValue,
           std::string(tn) + " launch_forward refuses K=3000");
  }

  if (g_timing_only) {
    time_all<T>(handle, b, timings);
    return;  // buffers are left to the process exit
  }

  // ---- accuracy at B = 2048 against the FP64 oracle
  if (!profile_only) {
    double *temb_d, *w_d, *bias_d, *dy_d, *s_d, *ref;
    unsigned long long* counters;
    CK(cudaMalloc(&temb_d, 8 * nt));
    CK(cudaMalloc(&w_d, 8 * nw));
    CK(cudaMalloc(&bias_d, 8 * N));
    CK(cudaMalloc(&dy_d, 8 * ny));
    CK(cudaMalloc(&s_d, 8 * nt));
    CK(cudaMalloc(&ref, 8 * std::max(nw, ny)));
    CK(cudaMalloc(&counters, 16));
    convert_to_double<T><<<kGrid, 256>>>(static_cast<T*>(b.temb[0]), temb_d, nt);
    convert_to_double<T><<<kGrid, 256>>>(static_cast<T*>(b.w[0]), w_d, nw);
    convert_to_double<T><<<kGrid, 256>>>(static_cast<T*>(b.bias[0]), bias_d, N);
    convert_to_double<T><<<kGrid, 256>>>(static_cast<T*>(b.dy[0]), dy_d, ny);
    silu_oracle<T><<<kGrid, 256>>>(temb_d, s_d, nt);
    CK(cudaGetLastError());

    poison<T>(b);
    run_fwd<T>(b, BMAX, b.temb[0], b.w[0], b.bias[0], 0);
    run_bwd<T>(b, BMAX, b.temb[0], b.w[0], b.dy[0], 0);
    CK(cudaDeviceSynchronize());

    dgemm<<<dim3(N / 64, BMAX / 64), 256>>>(ref, BMAX, N, K, s_d, K, 1, w_d, K, 1);
    add_bias<<<kGrid, 256>>>(ref, bias_d, BMAX, N);
    CK(cudaGetLastError());
    compare_out<T>("y", b.out, ref, ny, atol, rtol, counters);
    dgemm<<<dim3(K / 64, BMAX / 64), 256>>>(ref, BMAX, K, N, dy_d, N, 1, w_d, 1, K);
    dsilu_apply<<<kGrid, 256>>>(temb_d, ref, nt);
    CK(cudaGetLastError());
    compare_out<T>("grad_temb", b.gtemb, ref, nt, atol, rtol, counters);
    dgemm<<<dim3(K / 64, N / 64), 256>>>(ref, N, K, BMAX, dy_d, 1, N, s_d, 1, K);
    CK(cudaGetLastError());
    compare_out<T>("grad_weight", b.gw, ref, nw, atol, rtol, counters);
    col_sum<<<N / 256, 256>>>(dy_d, ref, BMAX, N);
    CK(cudaGetLastError());
    compare_out<T>("grad_bias", b.gb, ref, N, atol, rtol, counters);
    CK(cudaFree(temb_d));
    CK(cudaFree(w_d));
    CK(cudaFree(bias_d));
    CK(cudaFree(dy_d));
    CK(cudaFree(s_d));
    CK(cudaFree(ref));
    CK(cudaFree(counters));
  }
  if (profile_only) {
    for (int B : {1, 256, 2048}) {
      run_fwd<T>(b, B, b.temb[0], b.w[0], b.bias[0], 0);
      run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
    }
    // B = 1 again with the streaming kernels off: the GEMMs they replace, for comparison.
    const KernelChoice saved = g_choice;
    g_choice.streaming = Streaming::off;
    run_fwd<T>(b, 1, b.temb[0], b.w[0], b.bias[0], 0);
    run_bwd<T>(b, 1, b.temb[0], b.w[0], b.dy[0], 0);
    g_choice = saved;
    CK(cudaDeviceSynchronize());
    return;
  }
  const auto y_ref = to_host<T>(b.out, ny);
  const auto gt_ref = to_host<T>(b.gtemb, nt);
  const auto gw_ref = to_host<T>(b.gw, nw);
  const auto gb_ref = to_host<T>(b.gb, N);

  // ---- determinism: same inputs on another stream, raw bytes
  {
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    poison<T>(b);
    run_fwd<T>(b, BMAX, b.temb[0], b.w[0], b.bias[0], st);
    run_bwd<T>(b, BMAX, b.temb[0], b.w[0], b.dy[0], st);
    CK(cudaStreamSynchronize(st));
    CK(cudaStreamDestroy(st));
    const bool same = to_host<T>(b.out, ny) == y_ref && to_host<T>(b.gtemb, nt) == gt_ref &&
                      to_host<T>(b.gw, nw) == gw_ref && to_host<T>(b.gb, N) == gb_ref;
    report(same, std::string(tn) + " run-to-run / stream-to-stream bytes identical (B=2048)");
  }

  // ---- --fp32-tc-backward: every kernel of each GEMM gives the automatic choice's bytes
  if (g_fp32_tc && sizeof(T) == 4) {
    const Fp32TileChoice saved = g_fp32_tc_choice;
    const Fp32Tiles a = Fp32Tiles::automatic;
    const std::pair<const char*, Fp32TileChoice> kernels[] = {
        {"d_temb mma.sync", {a, Fp32Tiles::narrow, a}},
        {"d_temb wgmma narrow", {a, Fp32Tiles::wgmma_narrow, a}},
        {"d_temb wgmma medium", {a, Fp32Tiles::wgmma_medium, a}},
        {"d_temb wgmma wide", {a, Fp32Tiles::wgmma_wide, a}},
        {"grad_weight mma.sync", {a, a, Fp32Tiles::narrow}},
        {"grad_weight wgmma", {a, a, Fp32Tiles::wgmma_wide}}};
    for (int B : {1, 7, 20, 32, 100, BMAX}) {
      g_fp32_tc_choice = {};
      poison<T>(b);
      run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
      const auto gt = to_host<T>(b.gtemb, std::size_t(B) * K);
      const auto gw = to_host<T>(b.gw, nw);
      const auto gb = to_host<T>(b.gb, N);
      for (const auto& [name, choice] : kernels) {
        g_fp32_tc_choice = choice;
        poison<T>(b);
        run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
        const bool same = to_host<T>(b.gtemb, std::size_t(B) * K) == gt && to_host<T>(b.gw, nw) == gw &&
                          to_host<T>(b.gb, N) == gb;
        report(same, std::string("fp32 tensor-core backward, ") + name + ": the automatic choice's bytes (B=" +
                         std::to_string(B) + ")");
      }
    }
    g_fp32_tc_choice = saved;
  }

  // ---- CUDA graph: fwd+bwd at B = 64 captured (global mode) on a stream and replayed gives
  // the bytes of a direct launch
  {
    const int B = 64;
    poison<T>(b);
    run_fwd<T>(b, B, b.temb[0], b.w[0], b.bias[0], 0);
    run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
    const auto y = to_host<T>(b.out, std::size_t(B) * N);
    const auto gt = to_host<T>(b.gtemb, std::size_t(B) * K);
    const auto gw = to_host<T>(b.gw, nw);
    const auto gb = to_host<T>(b.gb, N);
    poison<T>(b);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    Problem p{storage_of<T>(), B, K, N};
    ForwardTensors ft{b.temb[0], b.w[0], b.bias[0], b.out};
    BackwardTensors bt{b.temb[0], b.w[0], b.dy[0], b.gtemb, b.gw, b.gb};
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    const cudaError_t ef = launch_forward(p, ft, b.ws, b.ws_bytes, st);
    const cudaError_t eb = backward_call(p, bt, b.ws, b.ws_bytes, st, {});
    cudaGraph_t graph = nullptr;
    const cudaError_t ec = cudaStreamEndCapture(st, &graph);
    bool ok = ef == cudaSuccess && eb == cudaSuccess && ec == cudaSuccess;
    if (ok) {
      cudaGraphExec_t exec;
      CK(cudaGraphInstantiate(&exec, graph, 0));
      CK(cudaGraphLaunch(exec, st));
      CK(cudaStreamSynchronize(st));
      ok = to_host<T>(b.out, std::size_t(B) * N) == y && to_host<T>(b.gtemb, std::size_t(B) * K) == gt &&
           to_host<T>(b.gw, nw) == gw && to_host<T>(b.gb, N) == gb;
      CK(cudaGraphExecDestroy(exec));
    }
    if (graph != nullptr) CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(st));
    cudaGetLastError();
    report(ok, std::string(tn) + " CUDA graph capture + replay (B=64) bytes equal direct launch (" +
                   cudaGetErrorString(ef) + ", " + cudaGetErrorString(eb) + ", " +
                   cudaGetErrorString(ec) + ")");
  }

  int* d_idx;
  CK(cudaMalloc(&d_idx, sizeof(int) * BMAX));
  auto gather = [&](const std::vector<int>& temb_idx, const std::vector<int>& dy_idx) {
    CK(cudaMemcpy(d_idx, temb_idx.data(), sizeof(int) * temb_idx.size(), cudaMemcpyHostToDevice));
    gather_rows<T><<<kGrid, 256>>>(static_cast<T*>(b.work_temb), static_cast<const T*>(b.temb[0]),
                                   d_idx, int(temb_idx.size()), K);
    CK(cudaMemcpy(d_idx, dy_idx.data(), sizeof(int) * dy_idx.size(), cudaMemcpyHostToDevice));
    gather_rows<T><<<kGrid, 256>>>(static_cast<T*>(b.work_dy), static_cast<const T*>(b.dy[0]),
                                   d_idx, int(dy_idx.size()), N);
    CK(cudaGetLastError());
  };

  // ---- batch invariance: rows alone / inside other batches / at other positions, raw bytes
  {
    std::vector<std::pair<std::string, std::vector<int>>> cases;
    cases.push_back({"B=1 row 0", {0}});
    cases.push_back({"B=1 row 777", {777}});
    cases.push_back({"B=1 row 2047", {2047}});
    cases.push_back({"B=3 rows 5,0,2047", {5, 0, 2047}});
    {
      std::vector<int> v(64);
      for (int i = 0; i < 64; ++i) v[i] = 63 - i;
      cases.push_back({"B=64 reversed", v});
    }
    {
      std::vector<int> v(257);
      for (int i = 0; i < 257; ++i) v[i] = (i * 7 + 3) % BMAX;
      cases.push_back({"B=257 strided", v});
    }
    {
      std::vector<int> v(258);
      for (int i = 0; i < 258; ++i) v[i] = 1000 + i;
      v[255] = 0;
      v[256] = 777;
      v[257] = 2047;
      cases.push_back({"B=258 rows 0,777,2047 at positions 255,256,257", v});
    }
    {
      std::vector<int> v(BMAX);
      for (int i = 0; i < BMAX; ++i) v[i] = BMAX - 1 - i;
      cases.push_back({"B=2048 reversed", v});
    }
    for (const auto& c : cases) {
      const int B = int(c.second.size());
      gather(c.second, c.second);
      poison<T>(b);
      run_fwd<T>(b, B, b.work_temb, b.w[0], b.bias[0], 0);
      run_bwd<T>(b, B, b.work_temb, b.w[0], b.work_dy, 0);
      const auto y = to_host<T>(b.out, std::size_t(B) * N);
      const auto gt = to_host<T>(b.gtemb, std::size_t(B) * K);
      int bad = 0;
      for (int i = 0; i < B; ++i) {
        const std::size_t r = c.second[i];
        if (std::memcmp(&y[i * sizeof(T) * N], &y_ref[r * sizeof(T) * N], sizeof(T) * N) != 0 ||
            std::memcmp(&gt[i * sizeof(T) * K], &gt_ref[r * sizeof(T) * K], sizeof(T) * K) != 0)
          ++bad;
      }
      report(bad == 0, std::string(tn) + " batch invariance y/grad_temb bytes, " + c.first +
                           " (" + std::to_string(bad) + " rows differ)");
    }
  }

  // ---- zero rows appended (dy = 0) leave grad_weight / grad_bias bytes unchanged
  {
    auto run_gw = [&](int rows, int B) {
      std::vector<int> ti(B), di(B);
      for (int i = 0; i < B; ++i) {
        ti[i] = i;
        di[i] = i < rows ? i : -1;
      }
      gather(ti, di);
      poison<T>(b);
      run_bwd<T>(b, B, b.work_temb, b.w[0], b.work_dy, 0);
      return std::make_pair(to_host<T>(b.gw, nw), to_host<T>(b.gb, N));
    };
    const auto base255 = run_gw(255, 255);
    for (int B : {256, 300}) {
      const auto r = run_gw(255, B);
      report(r == base255, std::string(tn) + " grad_weight/grad_bias bytes: 255 rows vs padded with zero rows to B=" +
                               std::to_string(B));
    }
    const auto base256 = run_gw(256, 256);
    const auto r = run_gw(256, BMAX);
    report(r == base256,
           std::string(tn) + " grad_weight/grad_bias bytes: 256 rows vs padded with zero rows to B=2048");
  }

  // ---- NaN propagation
  {
    std::vector<int> ti(4), di(4);
    for (int i = 0; i < 4; ++i) ti[i] = di[i] = i;
    gather(ti, di);
    const T nan_v = static_cast<T>(std::nanf(""));
    CK(cudaMemcpy(static_cast<T*>(b.work_temb) + 3 * K + 5, &nan_v, sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(static_cast<T*>(b.work_dy) + 1 * N + 9, &nan_v, sizeof(T), cudaMemcpyHostToDevice));
    poison<T>(b);
    run_fwd<T>(b, 4, b.work_temb, b.w[0], b.bias[0], 0);
    run_bwd<T>(b, 4, b.work_temb, b.w[0], b.work_dy, 0);
    std::vector<T> y(4 * std::size_t(N)), gt(4 * std::size_t(K)), gb(N), gwrow(K);
    CK(cudaMemcpy(y.data(), b.out, sizeof(T) * y.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gt.data(), b.gtemb, sizeof(T) * gt.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gb.data(), b.gb, sizeof(T) * gb.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gwrow.data(), static_cast<T*>(b.gw) + std::size_t(9) * K, sizeof(T) * K,
                  cudaMemcpyDeviceToHost));
    auto isnan_t = [](T v) { return std::isnan(static_cast<float>(v)); };
    int y3 = 0, y0 = 0, gt1 = 0, gt0 = 0, gw9 = 0;
    for (int n = 0; n < N; ++n) {
      y3 += isnan_t(y[3 * std::size_t(N) + n]);
      y0 += isnan_t(y[n]);
    }
    for (int k = 0; k < K; ++k) {
      gt1 += isnan_t(gt[K + k]);
      gt0 += isnan_t(gt[k]);
      gw9 += isnan_t(gwrow[k]);
    }
    const bool ok = y3 == N && y0 == 0 && gt1 == K && gt0 == 0 && gw9 == K && isnan_t(gb[9]) &&
                    !isnan_t(gb[8]);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s NaN propagation (y row3 %d/%d, y row0 %d, gtemb row1 %d/%d, gtemb row0 %d, gw row9 %d/%d)",
                  tn, y3, N, y0, gt1, K, gt0, gw9, K);
    report(ok, buf);
  }
  CK(cudaFree(d_idx));

  // ---- the bf16 GEMM implementations, byte for byte against mma.sync
  if (!f32 && g_compare) {
    const KernelChoice saved = g_choice;
    // each family (forward / grad_temb / grad_weight) compared with all-mma.sync
    constexpr int kFams = sizeof(kBf16Families) / sizeof(kBf16Families[0]);
    for (int B : {1, 3, 9, 16, 17, 32, 33, 64, 65, 127, 128, 129, 192, 193, 255, 256, 257, 1024, 2048}) {
      std::array<std::vector<unsigned char>, 4> out[kFams];
      for (int f = 0; f < kFams; ++f) {
        g_choice = kBf16Families[f].choice;
        out[f] = outputs_of<T>(b, B);
      }
      for (int f = 1; f < kFams; ++f) {
        for (int o = 0; o < 4; ++o) {
          const std::size_t diff = differing<T>(out[0][o], out[f][o]);
          char buf[200];
          std::snprintf(buf, sizeof buf, "bf16 B=%d %s: %s bytes equal mma.sync (%zu of %zu differ)", B,
                        kOutputNames[o], kBf16Families[f].name, diff, out[0][o].size() / sizeof(T));
          report(diff == 0, buf);
        }
      }
    }
    g_choice = saved;
  }

  // ---- the bf16 streaming forward, byte for byte against mma.sync, at every B it takes
  if (!f32 && g_compare) {
    const KernelChoice saved = g_choice;
    const GemmFamily mma = GemmFamily::mma_sync;
    for (int B = 1; B <= 8; ++B) {
      g_choice = KernelChoice{mma, mma, mma, Streaming::off};
      poison<T>(b);
      run_fwd<T>(b, B, b.temb[0], b.w[0], b.bias[0], 0);
      CK(cudaDeviceSynchronize());
      const auto reference = to_host<T>(b.out, std::size_t(B) * N);
      g_choice = KernelChoice{GemmFamily::automatic, mma, mma, Streaming::on};
      poison<T>(b);
      run_fwd<T>(b, B, b.temb[0], b.w[0], b.bias[0], 0);
      CK(cudaDeviceSynchronize());
      const std::size_t diff = differing<T>(reference, to_host<T>(b.out, std::size_t(B) * N));
      char buf[200];
      std::snprintf(buf, sizeof buf, "bf16 B=%d y: streaming forward bytes equal mma.sync (%zu of %zu differ)", B, diff,
                    reference.size() / sizeof(T));
      report(diff == 0, buf);
    }
    g_choice = saved;
  }

  // ---- the bf16 streaming backward kernels, byte for byte against mma.sync, at every B they take
  if (!f32 && g_compare) {
    const KernelChoice saved = g_choice;
    const GemmFamily mma = GemmFamily::mma_sync;
    auto gradients = [&](int B) {
      poison<T>(b);
      run_bwd<T>(b, B, b.temb[0], b.w[0], b.dy[0], 0);
      CK(cudaDeviceSynchronize());
      return std::array<std::vector<unsigned char>, 3>{to_host<T>(b.gtemb, std::size_t(B) * K),
                                                       to_host<T>(b.gw, std::size_t(N) * K), to_host<T>(b.gb, N)};
    };
    for (int B = 1; B <= 16; ++B) {
      g_choice = KernelChoice{mma, mma, mma, Streaming::off};
      const auto reference = gradients(B);
      // grad_weight streaming (d_temb on mma.sync), then both streaming where d_temb's kernel
      // takes B
      for (const GemmFamily dtemb : {mma, GemmFamily::automatic}) {
        if (dtemb == GemmFamily::automatic && B > 8) continue;
        g_choice = KernelChoice{mma, dtemb, GemmFamily::automatic, Streaming::on};
        const auto got = gradients(B);
        for (int o = 0; o < 3; ++o) {
          const std::size_t diff = differing<T>(reference[o], got[o]);
          char buf[200];
          std::snprintf(buf, sizeof buf, "bf16 B=%d %s: streaming %s backward bytes equal mma.sync (%zu of %zu differ)", B,
                        kOutputNames[o + 1], dtemb == mma ? "grad_weight's" : "d_temb and grad_weight's", diff,
                        reference[o].size() / sizeof(T));
          report(diff == 0, buf);
        }
      }
    }
    g_choice = saved;
  }

  // ---- the fp32 GEMMs, the forward's wide tiles and the backward's wgmma kernels against the
  // forward's narrow tiles and the backward's mma.sync kernels, byte for byte
  if (f32 && g_compare) {
    const KernelChoice saved = g_choice;
    const Fp32Tiles narrow = Fp32Tiles::narrow, wide = Fp32Tiles::wide;
    const Fp32TileChoice tilings[2] = {{narrow, narrow, narrow}, {wide, Fp32Tiles::wgmma_wide, Fp32Tiles::wgmma_wide}};
    const char* names[2] = {"narrow", "wide"};
    for (int B : {9, 17, 64, 255, 2048}) {
      std::array<std::vector<unsigned char>, 4> out[2];
      for (int f = 0; f < 2; ++f) {
        g_choice = KernelChoice{};
        g_choice.streaming = Streaming::off;
        g_choice.fp32 = tilings[f];
        out[f] = outputs_of<T>(b, B);
      }
      for (int f = 1; f < 2; ++f)
        for (int o = 0; o < 4; ++o) {
          const std::size_t diff = differing<T>(out[0][o], out[f][o]);
          char buf[200];
          std::snprintf(buf, sizeof buf, "fp32 B=%d %s: %s tiles' bytes equal narrow tiles' (%zu of %zu differ)", B,
                        kOutputNames[o], names[f], diff, out[0][o].size() / sizeof(T));
          report(diff == 0, buf);
        }
    }
    g_choice = saved;
  }

  // ---- the fp32 streaming forward kernels, byte for byte against the tiled ones, at every B they take
  if (f32 && g_compare) {
    const KernelChoice saved = g_choice;
    for (int B : {1, 2, 3, 5, 8, 15, 16}) {
      g_choice = KernelChoice{{}, {}, {}, Streaming::off};
      const auto tiled = outputs_of<T>(b, B);
      g_choice = KernelChoice{{}, {}, {}, Streaming::on};
      const auto streaming = outputs_of<T>(b, B);
      for (int o = 0; o < 4; ++o) {
        const std::size_t diff = differing<T>(tiled[o], streaming[o]);
        char buf[200];
        std::snprintf(buf, sizeof buf, "fp32 B=%d %s: streaming bytes equal tiled (%zu of %zu differ)", B,
                      kOutputNames[o], diff, tiled[o].size() / sizeof(T));
        report(diff == 0, buf);
      }
    }
    g_choice = saved;
  }

  time_all<T>(handle, b, timings);

  for (int s = 0; s < kSets; ++s) {
    CK(cudaFree(b.temb[s]));
    CK(cudaFree(b.w[s]));
    CK(cudaFree(b.bias[s]));
    CK(cudaFree(b.dy[s]));
  }
  CK(cudaFree(b.out));
  CK(cudaFree(b.gtemb));
  CK(cudaFree(b.gw));
  CK(cudaFree(b.gb));
  CK(cudaFree(b.work_temb));
  CK(cudaFree(b.work_dy));
  CK(cudaFree(b.ws));
}

}  // namespace

int main(int argc, char** argv) {
  bool strict = false;
  char detail[256] = {};
  CK(run_strict_math_probe(&strict, detail, sizeof detail));
  std::printf("strict-math probe: strict=%s (%s)\n", strict ? "true" : "false", detail);
  if (argc > 1 && std::strcmp(argv[1], "--probe-only") == 0) return 0;
  report(strict, "strict-math probe reports strict in the normal build");

  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  cublasHandle_t handle;
  CK(cublasCreate(&handle));
  CK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));

  bool profile_only = false, bf16_only = false, fp32_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--profile") == 0) profile_only = true;
    if (std::strcmp(argv[i], "--bf16-only") == 0) bf16_only = true;
    if (std::strcmp(argv[i], "--fp32-only") == 0) fp32_only = true;
    if (std::strcmp(argv[i], "--timing-only") == 0) g_timing_only = true;
    if (std::strcmp(argv[i], "--compare-gemms") == 0) g_compare = true;
    if (std::strcmp(argv[i], "--fp32-tc-backward") == 0) g_fp32_tc = true;
    if (std::strcmp(argv[i], "--fp32-tc-dtemb") == 0 && i + 1 < argc) {
      ++i;
      const std::string v = argv[i];
      if (v != "mma" && v != "narrow" && v != "medium" && v != "wide") {
        std::fprintf(stderr, "kernel_check: --fp32-tc-dtemb takes mma, narrow, medium or wide, not '%s'\n", argv[i]);
        return 2;
      }
      if (v == "mma") g_fp32_tc_choice.grad_weight = Fp32Tiles::narrow;
      g_fp32_tc_choice.grad_temb = v == "mma"      ? Fp32Tiles::narrow
                        : v == "narrow" ? Fp32Tiles::wgmma_narrow
                        : v == "medium" ? Fp32Tiles::wgmma_medium
                                        : Fp32Tiles::wgmma_wide;
    }
    if (std::strcmp(argv[i], "--gemms") == 0 && i + 1 < argc) {
      ++i;
      bool known = false;
      for (const NamedFamilies& f : kBf16Families) {
        if (std::strcmp(argv[i], f.flag) == 0) {
          g_choice = f.choice;
          known = true;
        }
      }
      if (!known) {
        std::fprintf(stderr, "kernel_check: --gemms takes mma, narrow, wide, swapped, swapped-narrow or automatic, not '%s'\n", argv[i]);
        return 2;
      }
    }
  }
  std::vector<Timing> t32, t16;
  if (!fp32_only) run_dtype<__nv_bfloat16>(handle, t16, profile_only);
  if (!bf16_only) run_dtype<float>(handle, t32, profile_only);
  if (profile_only) return 0;
  CK(cublasDestroy(handle));

  std::printf("\n%-5s %6s | %10s %10s | %10s %10s   (ms, median of 25)\n", "dtype", "B", "fwd",
              "fwd+bwd", "cuBLAS fwd", "cuBLAS f+b");
  for (const auto* tv : {&t16, &t32})
    for (const auto& t : *tv)
      std::printf("%-5s %6d | %10.4f %10.4f | %10.4f %10.4f\n", tv == &t16 ? "bf16" : "fp32", t.B,
                  t.fwd, t.fwdbwd, t.cub_fwd, t.cub_fwdbwd);
  if (g_compare) {
    static_assert(kFamiliesPerGemm == 5, "the header names five families per GEMM, in kFwdFamilies' and kDTembFamilies' order");
    std::printf("\nbf16 per GEMM (ms, median of 25): fwd with mma / narrow / wide / swapped / swapped 64-row; bwd "
                "with d_temb mma / narrow / medium / tall-narrow / wide (grad_w mma); bwd with grad_w wgmma "
                "cooperative / ping-pong (d_temb mma)\n");
    for (const auto& t : t16) {
      std::printf("B %5d | fwd", t.B);
      for (double ms : t.gemm_fwd) std::printf(" %8.4f", ms);
      std::printf(" | bwd dt");
      for (double ms : t.gemm_bwd_dt) std::printf(" %8.4f", ms);
      std::printf(" | bwd gw coop %8.4f pp %8.4f\n", t.gemm_bwd_gw, t.gemm_bwd_gw_pp);
    }
  }
  if (g_compare) {
    std::printf("\nstreaming off / on (ms, median of 25; bf16: forward up to B = 8, backward alone)\n");
    for (const auto* tv : {&t16, &t32})
      for (const auto& t : *tv)
        if (t.B <= 16) {
          if (tv == &t32)
            std::printf("fp32 B %5d | fwd %8.4f %8.4f | fwd+bwd %8.4f %8.4f\n", t.B, t.stream_fwd[0], t.stream_fwd[1],
                        t.stream_fwdbwd[0], t.stream_fwdbwd[1]);
          else
            std::printf("bf16 B %5d | fwd %8.4f %8.4f | bwd %8.4f %8.4f\n", t.B, t.stream_fwd[0], t.stream_fwd[1],
                        t.stream_bwd[0], t.stream_bwd[1]);
        }
  }
  if (g_fp32_tc) {
    std::printf("\nfp32 tensor-core backward (ms, median of 25): the whole backward; d_temb wgmma 8 / 16 / 32 / 64 / 128 batch "
                "rows; grad_weight wgmma (its stores whole-tile / box by box); d_temb and grad_weight on mma.sync; d_temb (128 rows) "
                "then grad_weight wgmma, whole-tile / box by box; the whole backward with grad_weight's whole-tile / box-by-box "
                "stores, in turn twice (whole box whole box)\n");
    for (const auto& t : t32)
      std::printf("B %5d | bwd %8.4f | dt %8.4f %8.4f %8.4f %8.4f %8.4f | gw %8.4f %8.4f | mma.sync dt %8.4f gw %8.4f | "
                  "dt+gw %8.4f %8.4f | bwd stores %8.4f %8.4f %8.4f %8.4f\n",
                  t.B, t.tc_bwd, t.tc_dtemb[0], t.tc_dtemb[1], t.tc_dtemb[2], t.tc_dtemb[3], t.tc_dtemb[4], t.tc_gradw,
                  t.tc_gradw_boxes, t.tc_mma[0], t.tc_mma[1], t.tc_pair[0], t.tc_pair[1], t.tc_bwd_stores[0],
                  t.tc_bwd_stores[1], t.tc_bwd_stores[2], t.tc_bwd_stores[3]);
    if (!t32.empty())
      std::printf("grad_weight's write floor: a memset of grad_weight takes %.4f ms (median of 25)\n", t32.front().memset_gw);
  }
  if (g_compare) {
    std::printf("\nfp32 tiled GEMMs (ms, median of 25): fwd with 144 x 64 / 128 x 128 TF32 mma.sync tiles, then the wgmma "
                "kernel's 64 x 32 / 128 x 64 / 128 x 128 tiles; bwd with d_temb mma.sync / wgmma (grad_w mma.sync); bwd with "
                "grad_w mma.sync / wgmma (d_temb mma.sync). At B <= 16 only the wgmma forward (the streaming kernels: above)\n");
    for (const auto& t : t32)
      std::printf("B %5d | fwd %8.4f %8.4f | wgmma %8.4f %8.4f %8.4f | bwd dt %8.4f %8.4f | bwd gw %8.4f %8.4f\n", t.B,
                  t.f32_fwd[0], t.f32_fwd[1], t.f32_fwd_wgmma[0], t.f32_fwd_wgmma[1], t.f32_fwd_wgmma[2],
                  t.f32_bwd_dt[0], t.f32_bwd_dt[1], t.f32_bwd_gw[0], t.f32_bwd_gw[1]);
  }
  std::printf("\nfailures: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
