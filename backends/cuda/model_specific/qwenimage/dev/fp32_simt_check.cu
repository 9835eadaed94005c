// Experiment (fourteenth session): CUTLASS 2.x SIMT SGEMMs on the FP32 forward and d_temb.
//
// The FP32 contract (docs/operators/qwenimage-adaln-mod-projection.md) makes each forward and
// d_temb element one fmaf chain in ascending reduction order from 0 (d_temb per fixed slice of
// 2304 rows). CUTLASS's SIMT GEMMs evaluate exactly that chain when they run without split-K
// (gemm/thread/mma_sm50.h: k outermost, d = a * b + d contracted to FFMA), so they could replace
// this library's own FFMA tiles if they are faster. This program measures that before any
// product code changes:
//   - every config's sampled elements (1024 per GEMM and B) against the same chain run on the host
//     with std::fmaf (IEEE fused multiply-add: the GPU's FFMA bit for bit), compared as bits;
//   - the median time of each config, and of cuBLAS's SGEMM (no TF32) on the same shapes.
// Forward: y[b][n] = sum_k s[b][k] W[n][k] + bias[n], computed transposed (run_forward, the form the
// library runs) with the bias added in the transposing kernel (one rounding of acc + bias, as the
// contract says), and directly (run_forward_direct: SiLU transposed as a column-major A, W as a
// column-major B, the bias as a broadcast C with beta = 1). d_temb: P[l][b][k] = sum_{n in slice l} dy[b][n] W[n][k].
//
// Build alone: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I<cutlass include>
//                   fp32_simt_check.cu -lcublas -o fp32_simt_check
#include "experiment_common.cuh"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <cublas_v2.h>

#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"

namespace {

constexpr int kK = 3072;
constexpr int kN = 18432;
constexpr int kSplitN = 8;
constexpr int kSlice = kN / kSplitN;

using RowMajor = cutlass::layout::RowMajor;
using ColumnMajor = cutlass::layout::ColumnMajor;
using Epilogue = cutlass::epilogue::thread::LinearCombination<float, 1, float, float>;

template <class LayoutA, class LayoutB, int TbM, int TbN, int WM, int WN, int Stages>
using SimtGemm = cutlass::gemm::device::GemmUniversal<
    float, LayoutA, float, LayoutB, float, RowMajor, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<TbM, TbN, 8>, cutlass::gemm::GemmShape<WM, WN, 8>, cutlass::gemm::GemmShape<1, 1, 1>,
    Epilogue, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, Stages, 1, 1>;

struct Buffers {
  float *s, *w, *bias, *dy, *y, *p, *st, *yt;
};

// sT[k][b] = s[b][k] (B x 3072 -> 3072 x B), 32 x 32 tiles through shared memory.
__global__ void transpose_s(const float* s, float* st, int B) {
  __shared__ float t[32][33];
  const int k0 = blockIdx.x * 32, b0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += 8)
    if (b0 + i < B) t[i][threadIdx.x] = s[size_t(b0 + i) * kK + k0 + threadIdx.x];
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8)
    if (b0 + threadIdx.x < B) st[size_t(k0 + i) * B + b0 + threadIdx.x] = t[threadIdx.x][i];
}

// y[b][n] = yT[n][b] + bias[n]: the contract's one rounding of acc + bias.
__global__ void bias_transpose(const float* yt, const float* bias, float* y, int B) {
  __shared__ float t[32][33];
  const int n0 = blockIdx.x * 32, b0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += 8)
    if (b0 + threadIdx.x < B) t[i][threadIdx.x] = yt[size_t(n0 + i) * B + b0 + threadIdx.x];
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8)
    if (b0 + i < B) y[size_t(b0 + i) * kN + n0 + threadIdx.x] = t[threadIdx.x][i] + bias[n0 + threadIdx.x];
}

__global__ void uniform(float* x, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = scale * ((h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f + 1.0f / 33554432.0f);  // never 0
  }
}

std::vector<float> to_host(const float* d, size_t n) {
  std::vector<float> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

unsigned bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The contract's chains on the host, for sampled elements; returns how many differ in any bit.
int check_forward(const Buffers& d, int B, const std::vector<float>& hs, const std::vector<float>& hw,
                  const std::vector<float>& hb) {
  const std::vector<float> hy = to_host(d.y, size_t(B) * kN);
  std::mt19937 rng(7);
  int bad = 0;
  for (int t = 0; t < 1024; ++t) {
    const int b = rng() % B, n = rng() % kN;
    float acc = 0.0f;
    for (int k = 0; k < kK; ++k) acc = std::fmaf(hs[size_t(b) * kK + k], hw[size_t(n) * kK + k], acc);
    const float want = acc + hb[n];
    if (bits(want) != bits(hy[size_t(b) * kN + n])) ++bad;
  }
  return bad;
}

int check_dtemb(const Buffers& d, int B, const std::vector<float>& hdy, const std::vector<float>& hw) {
  const std::vector<float> hp = to_host(d.p, size_t(kSplitN) * B * kK);
  std::mt19937 rng(11);
  int bad = 0;
  for (int t = 0; t < 1024; ++t) {
    const int l = rng() % kSplitN, b = rng() % B, k = rng() % kK;
    float acc = 0.0f;
    for (int n = l * kSlice; n < (l + 1) * kSlice; ++n)
      acc = std::fmaf(hdy[size_t(b) * kN + n], hw[size_t(n) * kK + k], acc);
    if (bits(acc) != bits(hp[(size_t(l) * B + b) * kK + k])) ++bad;
  }
  return bad;
}

// Checks and launches one CUTLASS GEMM; a GEMM that cannot run ends the program naming `what`.
template <class G>
void launch_or_exit(const typename G::Arguments& args, const char* what) {
  G gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    std::printf("%s: cannot implement\n", what);
    std::exit(1);
  }
  if (gemm.initialize(args, nullptr) != cutlass::Status::kSuccess || gemm() != cutlass::Status::kSuccess) {
    std::printf("%s: launch failed\n", what);
    std::exit(1);
  }
}

// The forward with its output transposed: yT[n][b] = sum_k W[n][k] sT[k][b] (A = W row-major,
// B = sT row-major, the operand layouts of d_temb), then y[b][n] = yT[n][b] + bias[n].
template <class G>
void run_forward(const Buffers& d, int B) {
  transpose_s<<<dim3(kK / 32, (B + 31) / 32), dim3(32, 8)>>>(d.s, d.st, B);
  typename G::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {kN, B, kK}, 1, {1.0f, 0.0f}, d.w, d.st,
                             nullptr, d.yt, 0, 0, 0, 0, kK, B, B, B);
  launch_or_exit<G>(args, "forward");
  bias_transpose<<<dim3(kN / 32, (B + 31) / 32), dim3(32, 8)>>>(d.yt, d.bias, d.y, B);
}

// The forward as y[b][n] directly, with SiLU transposed: A = sT (B x 3072, column-major: the batch
// contiguous), B = W (3072 x 18432, column-major: the reduction contiguous), the bias as a C of row
// stride 0 with beta = 1 (D = 1 * acc + 1 * bias: one rounding of acc + bias), D = y row-major.
template <class G>
void run_forward_direct(const Buffers& d, int B) {
  transpose_s<<<dim3(kK / 32, (B + 31) / 32), dim3(32, 8)>>>(d.s, d.st, B);
  typename G::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {B, kN, kK}, 1, {1.0f, 1.0f}, d.st, d.w,
                             d.bias, d.y, 0, 0, 0, 0, B, kK, 0, kN);
  launch_or_exit<G>(args, "forward direct");
}

template <class G>
void run_dtemb(const Buffers& d, int B) {
  typename G::Arguments args(cutlass::gemm::GemmUniversalMode::kBatched, {B, kK, kSlice}, kSplitN, {1.0f, 0.0f},
                             d.dy, d.w, nullptr, d.p, kSlice, std::int64_t(kSlice) * kK, 0, std::int64_t(B) * kK,
                             kN, kK, kK, kK);
  launch_or_exit<G>(args, "d_temb");
}

struct Host {
  std::vector<float> s, w, bias, dy;
};

template <int TbM, int TbN, int WM, int WN, int Stages>
void config(const char* name, const Buffers& d, const Host& h, const std::vector<int>& batches) {
  using Fwd = SimtGemm<RowMajor, RowMajor, TbM, TbN, WM, WN, Stages>;
  using Dt = Fwd;
  using Direct = SimtGemm<ColumnMajor, ColumnMajor, TbM, TbN, WM, WN, Stages>;
  for (int B : batches) {
    CK(cudaMemset(d.y, 0xff, size_t(B) * kN * sizeof(float)));  // poison: an unwritten element fails
    CK(cudaMemset(d.p, 0xff, size_t(kSplitN) * B * kK * sizeof(float)));
    run_forward<Fwd>(d, B);
    run_dtemb<Dt>(d, B);
    CK(cudaDeviceSynchronize());
    const int bad_f = check_forward(d, B, h.s, h.w, h.bias);
    const int bad_d = check_dtemb(d, B, h.dy, h.w);
    const double tf = median_ms(2, 10, [&](int) { run_forward<Fwd>(d, B); });
    const double td = median_ms(2, 10, [&](int) { run_dtemb<Dt>(d, B); });
    CK(cudaMemset(d.y, 0xff, size_t(B) * kN * sizeof(float)));
    run_forward_direct<Direct>(d, B);
    CK(cudaDeviceSynchronize());
    const int bad_x = check_forward(d, B, h.s, h.w, h.bias);
    const double tx = median_ms(2, 10, [&](int) { run_forward_direct<Direct>(d, B); });
    const double gf = 2.0 * B * kK * double(kN) * 1e-9;
    std::printf("%-22s B=%5d  forward %8.4f ms (%5.1f TFLOP/s, %d/1024 bits differ)  d_temb %8.4f ms (%5.1f TFLOP/s, %d/1024 differ)"
                "  forward direct %8.4f ms (%5.1f TFLOP/s, %d/1024 differ)\n",
                name, B, tf, gf / tf, bad_f, td, gf / td, bad_d, tx, gf / tx, bad_x);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> batches{64, 128, 256, 512, 1024, 2048};
  if (argc > 1 && std::strcmp(argv[1], "--quick") == 0) batches = {256, 2048};
  const int max_b = 2048;
  Buffers d{};
  CK(cudaMalloc(&d.s, size_t(max_b) * kK * 4));
  CK(cudaMalloc(&d.w, size_t(kN) * kK * 4));
  CK(cudaMalloc(&d.bias, size_t(kN) * 4));
  CK(cudaMalloc(&d.dy, size_t(max_b) * kN * 4));
  CK(cudaMalloc(&d.y, size_t(max_b) * kN * 4));
  CK(cudaMalloc(&d.p, size_t(kSplitN) * max_b * kK * 4));
  CK(cudaMalloc(&d.st, size_t(max_b) * kK * 4));
  CK(cudaMalloc(&d.yt, size_t(max_b) * kN * 4));
  uniform<<<1024, 256>>>(d.s, size_t(max_b) * kK, 1u, 1.0f);
  uniform<<<1024, 256>>>(d.w, size_t(kN) * kK, 2u, 0.02f);
  uniform<<<64, 256>>>(d.bias, kN, 3u, 0.5f);
  uniform<<<1024, 256>>>(d.dy, size_t(max_b) * kN, 4u, 1.0f);
  CK(cudaDeviceSynchronize());
  Host h{to_host(d.s, size_t(max_b) * kK), to_host(d.w, size_t(kN) * kK), to_host(d.bias, kN),
         to_host(d.dy, size_t(max_b) * kN)};

  // cuBLAS SGEMM (pedantic FP32, no TF32) on the same shapes: the in-process baseline's GEMMs.
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  for (int B : batches) {
    const float one = 1.0f, zero = 0.0f;
    // y^T (N x B, column-major = y row-major) = W^T... : C[n][b] = sum_k W[n][k] s[b][k]
    const double tf = median_ms(2, 10, [&](int) {
      cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, kN, B, kK, &one, d.w, kK, d.s, kK, &zero, d.y, kN);
    });
    // P_l^T (K x B column-major) = W_l^T (K x 2304) dy_l^T (2304 x B), strided over the 8 slices
    const double td = median_ms(2, 10, [&](int) {
      cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, kK, B, kSlice, &one, d.w, kK,
                                std::int64_t(kSlice) * kK, d.dy, kN, kSlice, &zero, d.p, kK, std::int64_t(B) * kK,
                                kSplitN);
    });
    const double gf = 2.0 * B * kK * double(kN) * 1e-9;
    std::printf("%-22s B=%5d  forward %8.4f ms (%5.1f TFLOP/s)  d_temb %8.4f ms (%5.1f TFLOP/s)\n", "cublas-sgemm", B, tf,
                gf / tf, td, gf / td);
  }
  CK(cudaGetLastError());

  config<128, 256, 64, 64, 3>("simt-128x256-w64x64-s3", d, h, batches);
  config<128, 256, 64, 64, 4>("simt-128x256-w64x64-s4", d, h, batches);
  config<256, 128, 64, 64, 4>("simt-256x128-w64x64-s4", d, h, batches);
  config<128, 128, 32, 64, 4>("simt-128x128-w32x64-s4", d, h, batches);
  config<128, 64, 64, 32, 4>("simt-128x64-w64x32-s4", d, h, batches);
  config<64, 128, 32, 64, 5>("simt-64x128-w32x64-s5", d, h, batches);
  config<64, 256, 32, 64, 4>("simt-64x256-w32x64-s4", d, h, batches);
  return 0;
}
