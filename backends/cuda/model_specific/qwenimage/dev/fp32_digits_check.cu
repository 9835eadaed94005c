// The FP32 operator under the exact-digit contract that docs/notes/fp32-on-tensor-cores.md
// proposes, end to end on the GPU with cuBLAS's INT8 GEMMs: forward, d_temb and grad_weight.
// Development harness, not part of the operator. Measures whether that design can reach issue 5's
// FP32 target at B = 2048 (forward + backward <= 0.5x cuBLAS FP32), and what it costs at B = 1.
//
// The contract evaluated here, for each of the three products C[m, c] = sum_r X[m, r] Y[c, r]
// (forward: X = W, Y = s, r = k; d_temb: X = W^T, Y = dy, r = n, all 18432 at once; grad_weight:
// X = s^T, Y = dy^T, r = b):
//   - each operand row over the reduction (a row of s, W or dy, a column of W, s or dy) gets a
//     power-of-two scale 2^e with every |x| of it below 2^e (e = 0 for an all-zero one);
//   - x is rounded to nearest as the 30-bit fixed-point integer q = rint(x * 2^(30 - e)) and cut
//     into four balanced base-256 digits, q = d0 * 2^24 + d1 * 2^16 + d2 * 2^8 + d3, each digit
//     in [-128, 127] (d0 in [-64, 64]);
//   - the ten digit products of weight i + j <= 3 are summed over r exactly, as four diagonal
//     integers D_t = sum_r sum_{i + j = t} x_i[r] y_j[r] (|D_t| < 2^31 for r up to 18432: INT32
//     holds them);
//   - C = 2^(ex + ey - 12) * (((D_0 + D_1 2^-8) + D_2 2^-16) + D_3 2^-24), the adds in FP64 in
//     that order (the scalings are exact); then y = round_fp32(C + bias), grad_temb =
//     round_fp32(round_fp32(C) * silu'(temb)) (silu' in FP32), grad_weight = round_fp32(C).
// d_temb also runs as "d_temb/8" (eighteenth session): W's column scales over each of the 8 fixed
// slices of 2304 rows instead of all 18432 (the scales a streaming kernel at small B can find from
// the tile it reads, dev/fp32_digits_small_b.cu), dy's over its whole row; each slice's diagonals
// one strided batched INT8 GEMM, and the slices' values added in FP64 in ascending order.
// Each D_t is one INT8 GEMM with the digit planes concatenated along r: X's planes stored
// [d0 d1 d2 d3] per row, Y's [d3 d2 d1 d0], so D_t pairs the first (t + 1) R of X's row with the
// last (t + 1) R of Y's. Being exact, D_t's bytes cannot depend on the kernel cuBLAS picks for a
// batch size: batch invariance by exactness, checked below on row 0 at B = 1 against B = 2048.
//
// Prints, per product: accuracy over every output against an FP64 GEMM of the same FP32 operands
// (in units of the FP32 gate |x - ref| <= 1e-4 + 1e-4 |ref|; cuBLAS FP32 alongside), and median
// times of each step at B = 2048 and B = 1 against cuBLAS FP32 (TF32 off) on the same GEMM.
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/fp32_digits_check.cu -lcublas -o fp32_digits_check
// Run: LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./fp32_digits_check
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "experiment_common.cuh"
#include "fp32_digits.cuh"
#include "int8_gemm.cuh"

namespace {

using fp32_digits::exponent_above;

constexpr int K = 3072;
constexpr int N = 18432;
constexpr int BMAX = 2048;
constexpr int kDigits = 4;
constexpr int kThreads = 256;

__device__ float uniform(std::size_t i, unsigned seed) {  // in [-0.5, 0.5), never zero
  unsigned h = unsigned(i) * 2654435761u ^ seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (float(h >> 8) + 0.5f) / 16777216.0f - 0.5f;
}

#define GRID_STRIDE(i, n) \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(gridDim.x) * blockDim.x)

// Uniform values with standard deviation `sd`.
__global__ void fill_uniform(float* p, std::size_t n, float sd, unsigned seed) {
  GRID_STRIDE(i, n) p[i] = uniform(i, seed) * sd * 3.4641016f;
}
__global__ void silu(const float* x, float* s, std::size_t n) {
  GRID_STRIDE(i, n) s[i] = x[i] / (1.0f + expf(-x[i]));
}
__global__ void to_double(const float* x, double* y, std::size_t n) {
  GRID_STRIDE(i, n) y[i] = x[i];
}

// q and its four balanced digits, most significant first.
__device__ void digits_of(float x, int e, std::int8_t (&d)[kDigits]) {
  const std::uint32_t w = fp32_digits::digit_word(fp32_digits::q_exact(x, e));
  for (int i = 0; i < kDigits; ++i) d[i] = static_cast<std::int8_t>(fp32_digits::digit(w, i));
}
// The scale exponent of a row of `len` values, for every thread of the block.
__device__ int row_exponent(const float* row, int len) {
  __shared__ float warp_m[32];
  return exponent_above(fp32_digits::block_max_abs<kThreads>(row, len, warp_m));
}

// Rows of length `len` (contiguous, the reduction): one block per row, its scale exponent and its
// digit planes [row][plane][len], planes in the order d0 .. d3 or (`reversed`) d3 .. d0.
template <bool reversed>
__global__ void __launch_bounds__(kThreads) cut_rows(const float* x, int len, std::int8_t* planes, int* exps) {
  const float* row = x + std::size_t(blockIdx.x) * len;
  const int e = row_exponent(row, len);
  if (threadIdx.x == 0) exps[blockIdx.x] = e;
  std::int8_t* out = planes + std::size_t(blockIdx.x) * kDigits * len;
  for (int r = threadIdx.x; r < len; r += kThreads) {
    std::int8_t d[kDigits];
    digits_of(row[r], e, d);
    for (int i = 0; i < kDigits; ++i) out[std::size_t(reversed ? kDigits - 1 - i : i) * len + r] = d[i];
  }
}

// Rows of dy (length N, the reduction of d_temb) under the whole row's scale, written per slice of
// kSliceRows: planes [slice][row][plane][kSliceRows], planes in the order d3 .. d0 (the Y side).
constexpr int kSlices = 8;
constexpr int kSliceRows = N / kSlices;
__global__ void __launch_bounds__(kThreads) cut_rows_sliced(const float* x, int rows, std::int8_t* planes, int* exps) {
  const float* row = x + std::size_t(blockIdx.x) * N;
  const int e = row_exponent(row, N);
  if (threadIdx.x == 0) exps[blockIdx.x] = e;
  for (int r = threadIdx.x; r < N; r += kThreads) {
    std::int8_t d[kDigits];
    digits_of(row[r], e, d);
    const int sl = r / kSliceRows, rr = r % kSliceRows;
    std::int8_t* out = planes + (std::size_t(sl) * rows + blockIdx.x) * kDigits * kSliceRows;
    for (int i = 0; i < kDigits; ++i) out[std::size_t(kDigits - 1 - i) * kSliceRows + rr] = d[i];
  }
}

// Columns of a row-major [rows][cols] matrix whose rows are the reduction: the largest |x| per
// column (as float bits, non-negative, so integer max is float max; max is exact in any order).
__global__ void column_max(const float* x, int rows, int cols, unsigned* max_bits) {
  const int c = blockIdx.x * 32 + threadIdx.x;
  float m = 0.0f;
  for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
    m = fmaxf(m, fabsf(x[std::size_t(r) * cols + c]));
  atomicMax(max_bits + c, __float_as_uint(m));
}
__global__ void exponents_of(const unsigned* max_bits, int n, int* exps) {
  GRID_STRIDE(i, std::size_t(n)) exps[i] = exponent_above(__uint_as_float(max_bits[i]));
}
// The same columns cut into planes [col][plane][rows] through a 32 x 32 tile in shared memory
// (read along columns, written along rows).
template <bool reversed>
__global__ void cut_cols(const float* x, int rows, int cols, const int* exps, std::int8_t* planes) {
  __shared__ float tile[32][33];
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y)
    tile[i][threadIdx.x] = r0 + i < rows ? x[std::size_t(r0 + i) * cols + c0 + threadIdx.x] : 0.0f;
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {  // column c0 + i, row r0 + threadIdx.x
    const int r = r0 + threadIdx.x;
    if (r >= rows) continue;
    std::int8_t d[kDigits];
    digits_of(tile[threadIdx.x][i], exps[c0 + i], d);
    std::int8_t* out = planes + std::size_t(c0 + i) * kDigits * rows;
    for (int p = 0; p < kDigits; ++p) out[std::size_t(reversed ? kDigits - 1 - p : p) * rows + r] = d[p];
  }
}

// Exponents and digit planes of one operand of a product.
struct Digits {
  std::int8_t* planes;
  int* exps;
  unsigned* max_bits;  // columns only
};

void cut_operand_rows(const float* x, int rows, int len, bool reversed, const Digits& d) {
  if (reversed)
    cut_rows<true><<<rows, kThreads>>>(x, len, d.planes, d.exps);
  else
    cut_rows<false><<<rows, kThreads>>>(x, len, d.planes, d.exps);
}
void cut_operand_cols(const float* x, int rows, int cols, bool reversed, const Digits& d) {
  CK(cudaMemsetAsync(d.max_bits, 0, std::size_t(cols) * 4));
  column_max<<<dim3(cols / 32, std::min(64, (rows + 7) / 8)), dim3(32, 8)>>>(x, rows, cols, d.max_bits);
  exponents_of<<<(cols + 255) / 256, 256>>>(d.max_bits, cols, d.exps);
  const dim3 grid(cols / 32, (rows + 31) / 32), block(32, 8);
  if (reversed)
    cut_cols<true><<<grid, block>>>(x, rows, cols, d.exps, d.planes);
  else
    cut_cols<false><<<grid, block>>>(x, rows, cols, d.exps, d.planes);
}

// The four diagonal GEMMs: D_t[m + c * M] (column-major M x Cn) over reduction length R.
void diagonal_gemms(cublasHandle_t h, int M, int Cn, int R, const Digits& x, const Digits& y, std::int32_t* diag) {
  const std::size_t plane = std::size_t(M) * Cn;
  for (int t = 0; t < kDigits; ++t)  // X's planes 0 .. t against Y's planes 3 - t .. 3 (digits t .. 0)
    gemm_s8(h, M, Cn, (t + 1) * R, x.planes, kDigits * R, y.planes + std::size_t(kDigits - 1 - t) * R, kDigits * R,
            diag + t * plane);
}

// d_temb per slice (per-slice column scales of W): for each diagonal t one strided batched GEMM over
// the 8 slices, D_t of slice s at diag[(4 s + t) M Cn] (column-major K x B).
void slice_gemms(cublasHandle_t h, int Cn, const Digits& w, const Digits& dy, std::int32_t* diag) {
  const std::size_t plane = std::size_t(K) * Cn;
  const std::int32_t one = 1, zero = 0;
  for (int t = 0; t < kDigits; ++t)
    ckb(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, K, Cn, (t + 1) * kSliceRows, &one, w.planes, CUDA_R_8I,
                                   kDigits * kSliceRows, (long long)K * kDigits * kSliceRows,
                                   dy.planes + std::size_t(kDigits - 1 - t) * kSliceRows, CUDA_R_8I,
                                   kDigits * kSliceRows, (long long)Cn * kDigits * kSliceRows, &zero, diag + t * plane,
                                   CUDA_R_32I, K, (long long)kDigits * plane, kSlices, CUBLAS_COMPUTE_32I,
                                   CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx int8");
}
// g = round_fp32(sum over the slices, ascending, of Z_s 2^(e_dy + e_col(s) - 36) in FP64), then
// grad_temb = round_fp32(g silu'(temb)).
__global__ void combine_slices(const std::int32_t* diag, int Cn, const int* e_col, const int* e_dy, const float* temb,
                               float* out) {
  const std::size_t plane = std::size_t(K) * Cn;
  GRID_STRIDE(i, plane) {
    const int m = int(i % K), c = int(i / K);
    double v = 0.0;
    for (int sl = 0; sl < kSlices; ++sl) {
      const std::int32_t* d = diag + std::size_t(kDigits) * sl * plane + i;
      const long long z = (static_cast<long long>(d[0]) << 24) + (static_cast<long long>(d[plane]) << 16) +
                          (static_cast<long long>(d[2 * plane]) << 8) + d[3 * plane];
      v += ldexp(static_cast<double>(z), e_col[sl * K + m] + e_dy[c] - 36);
    }
    const float x = temb[i], sg = 1.0f / (1.0f + expf(-x));
    out[i] = static_cast<float>(v) * (sg * (1.0f + x * (1.0f - sg)));
  }
}

enum class Epilogue { bias, silu_grad, plain };

// out[c * M + m] from the diagonals (the GEMMs' column-major layout): + bias[m] (forward), times
// silu'(temb[c * M + m]) (d_temb), or as it is (grad_weight).
template <Epilogue ep>
__global__ void combine(const std::int32_t* diag, int M, int Cn, const int* ex, const int* ey, const float* extra,
                        float* out) {
  const std::size_t plane = std::size_t(M) * Cn;
  GRID_STRIDE(i, plane) {
    const int m = int(i % M), c = int(i / M);
    double acc = diag[i];
    acc += ldexp(static_cast<double>(diag[plane + i]), -8);
    acc += ldexp(static_cast<double>(diag[2 * plane + i]), -16);
    acc += ldexp(static_cast<double>(diag[3 * plane + i]), -24);
    acc = ldexp(acc, ex[m] + ey[c] - 12);
    if constexpr (ep == Epilogue::bias) {
      out[i] = static_cast<float>(acc + static_cast<double>(extra[m]));
    } else if constexpr (ep == Epilogue::silu_grad) {
      const float x = extra[i], sg = 1.0f / (1.0f + expf(-x));
      out[i] = static_cast<float>(acc) * (sg * (1.0f + x * (1.0f - sg)));
    } else {
      out[i] = static_cast<float>(acc);
    }
  }
}

// Largest |x - ref| / (1e-4 + 1e-4 |ref|) (bits of a non-negative float, compared as integers)
// and how many exceed 1 (a NaN counts).
__global__ void gate_ratio(const float* x, const double* ref, std::size_t n, unsigned* max_bits,
                           unsigned long long* over) {
  GRID_STRIDE(i, n) {
    const float r = static_cast<float>(fabs(x[i] - ref[i]) / (1e-4 + 1e-4 * fabs(ref[i])));
    atomicMax(max_bits, __float_as_uint(r));
    if (!(r <= 1.0f)) atomicAdd(over, 1ull);
  }
}
// The epilogues of the FP64 references (the oracle: the same function in FP64 of the same FP32
// inputs) and of cuBLAS FP32 (for calibration), in T's arithmetic.
template <class T>
__global__ void add_bias(T* y, const float* bias, std::size_t n) {
  GRID_STRIDE(i, n) y[i] += bias[i % N];
}
template <class T>
__global__ void times_silu_grad(T* g, const float* temb, std::size_t n) {
  GRID_STRIDE(i, n) {
    const T x = temb[i], sg = T(1) / (T(1) + exp(-x));
    g[i] *= sg * (T(1) + x * (T(1) - sg));
  }
}

struct Tensors {
  float *temb, *s, *w, *bias, *dy;
  float *y, *gt, *gw;  // outputs
  Digits s_rows, w_rows, dy_rows, w_cols, dy_cols, s_cols;
  Digits w_slice_cols, dy_sliced;  // d_temb with per-slice column scales
  std::int32_t* diag;
};

// The three products under the contract for B rows: each cuts its operands, runs its four
// diagonal GEMMs and combines them.
enum class Product { forward, d_temb, d_temb_slices, grad_weight };
void cut(const Tensors& t, Product p, int B) {
  switch (p) {
    case Product::forward:
      cut_operand_rows(t.w, N, K, false, t.w_rows);
      cut_operand_rows(t.s, B, K, true, t.s_rows);
      break;
    case Product::d_temb:
      cut_operand_cols(t.w, N, K, false, t.w_cols);
      cut_operand_rows(t.dy, B, N, true, t.dy_rows);
      break;
    case Product::d_temb_slices:
      for (int sl = 0; sl < kSlices; ++sl) {
        const std::size_t off = std::size_t(sl) * kSliceRows * K;
        cut_operand_cols(t.w + off, kSliceRows, K, false,
                         Digits{t.w_slice_cols.planes + off * kDigits, t.w_slice_cols.exps + sl * K,
                                t.w_slice_cols.max_bits + sl * K});
      }
      cut_rows_sliced<<<B, kThreads>>>(t.dy, B, t.dy_sliced.planes, t.dy_sliced.exps);
      break;
    case Product::grad_weight:
      cut_operand_cols(t.s, B, K, false, t.s_cols);
      cut_operand_cols(t.dy, B, N, true, t.dy_cols);
      break;
  }
}
void gemms(cublasHandle_t h, const Tensors& t, Product p, int B) {
  switch (p) {
    case Product::forward: diagonal_gemms(h, N, B, K, t.w_rows, t.s_rows, t.diag); break;
    case Product::d_temb: diagonal_gemms(h, K, B, N, t.w_cols, t.dy_rows, t.diag); break;
    case Product::d_temb_slices: slice_gemms(h, B, t.w_slice_cols, t.dy_sliced, t.diag); break;
    case Product::grad_weight: diagonal_gemms(h, K, N, B, t.s_cols, t.dy_cols, t.diag); break;
  }
}
void run(cublasHandle_t h, const Tensors& t, Product p, int B) {
  cut(t, p, B);
  gemms(h, t, p, B);
  switch (p) {
    case Product::forward:
      combine<Epilogue::bias><<<1024, 256>>>(t.diag, N, B, t.w_rows.exps, t.s_rows.exps, t.bias, t.y);
      break;
    case Product::d_temb:
      combine<Epilogue::silu_grad><<<1024, 256>>>(t.diag, K, B, t.w_cols.exps, t.dy_rows.exps, t.temb, t.gt);
      break;
    case Product::d_temb_slices:
      combine_slices<<<1024, 256>>>(t.diag, B, t.w_slice_cols.exps, t.dy_sliced.exps, t.temb, t.gt);
      break;
    case Product::grad_weight:
      combine<Epilogue::plain><<<1024, 256>>>(t.diag, K, N, t.s_cols.exps, t.dy_cols.exps, nullptr, t.gw);
      break;
  }
}

// cuBLAS FP32 and FP64 on the same products: C (column-major M x Cn) = op_x(X) op_y(Y) with X
// and Y column-major as cuBLAS sees them (forward: T, N; d_temb: N, N; grad_weight: N, T).
void sgemm(cublasHandle_t h, cublasOperation_t op_x, cublasOperation_t op_y, int M, int Cn, int R, const float* x,
           int ldx, const float* y, int ldy, float* c) {
  const float one = 1.0f, zero = 0.0f;
  ckb(cublasSgemm(h, op_x, op_y, M, Cn, R, &one, x, ldx, y, ldy, &zero, c, M), "cublasSgemm");
}
void dgemm(cublasHandle_t h, cublasOperation_t op_x, cublasOperation_t op_y, int M, int Cn, int R, const double* x,
           int ldx, const double* y, int ldy, double* c) {
  const double one = 1.0, zero = 0.0;
  ckb(cublasDgemm(h, op_x, op_y, M, Cn, R, &one, x, ldx, y, ldy, &zero, c, M), "cublasDgemm");
}
constexpr cublasOperation_t T = CUBLAS_OP_T, NT = CUBLAS_OP_N;

Digits alloc_digits(std::size_t elems, int exps) {
  Digits d{};
  CK(cudaMalloc(&d.planes, elems * kDigits));
  CK(cudaMalloc(&d.exps, std::size_t(exps) * 4));
  CK(cudaMalloc(&d.max_bits, std::size_t(exps) * 4));
  return d;
}

}  // namespace

int main() {
  cublasHandle_t h;
  ckb(cublasCreate(&h), "cublasCreate");
  ckb(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32 for FP32
  const std::size_t nt = std::size_t(BMAX) * K, nw = std::size_t(N) * K, ny = std::size_t(BMAX) * N;
  Tensors t{};
  for (float** p : {&t.temb, &t.s}) CK(cudaMalloc(p, nt * 4));
  CK(cudaMalloc(&t.w, nw * 4));
  CK(cudaMalloc(&t.bias, N * 4));
  CK(cudaMalloc(&t.dy, ny * 4));
  CK(cudaMalloc(&t.y, ny * 4));
  CK(cudaMalloc(&t.gt, nt * 4));
  CK(cudaMalloc(&t.gw, nw * 4));
  t.s_rows = alloc_digits(nt, BMAX);
  t.w_rows = alloc_digits(nw, N);
  t.dy_rows = alloc_digits(ny, BMAX);
  t.w_cols = alloc_digits(nw, K);
  t.dy_cols = alloc_digits(ny, N);
  t.s_cols = alloc_digits(nt, K);
  t.w_slice_cols = alloc_digits(nw, kSlices * K);
  t.dy_sliced = alloc_digits(ny, BMAX);
  CK(cudaMalloc(&t.diag, nw * kDigits * 4));  // the largest product: grad_weight's N x K
  // The conformance distributions: temb std 2, W and bias std 0.02, grad_out std 1.
  fill_uniform<<<1024, 256>>>(t.temb, nt, 2.0f, 101);
  fill_uniform<<<1024, 256>>>(t.w, nw, 0.02f, 102);
  fill_uniform<<<64, 256>>>(t.bias, N, 0.02f, 103);
  fill_uniform<<<1024, 256>>>(t.dy, ny, 1.0f, 104);
  silu<<<1024, 256>>>(t.temb, t.s, nt);
  CK(cudaDeviceSynchronize());

  // FP64 references of the same FP32 inputs.
  double *sd, *wd, *dyd, *ref;
  CK(cudaMalloc(&sd, nt * 8));
  CK(cudaMalloc(&wd, nw * 8));
  CK(cudaMalloc(&dyd, ny * 8));
  CK(cudaMalloc(&ref, nw * 8));
  to_double<<<1024, 256>>>(t.s, sd, nt);
  to_double<<<1024, 256>>>(t.w, wd, nw);
  to_double<<<1024, 256>>>(t.dy, dyd, ny);
  float* f32;
  CK(cudaMalloc(&f32, nw * 4));
  unsigned* max_bits;
  unsigned long long* over;
  CK(cudaMalloc(&max_bits, 4));
  CK(cudaMalloc(&over, 8));
  int failures = 0;
  auto gate = [&](const float* x, std::size_t n, const char* product, const char* what) {
    CK(cudaMemset(max_bits, 0, 4));
    CK(cudaMemset(over, 0, 8));
    gate_ratio<<<1024, 256>>>(x, ref, n, max_bits, over);
    unsigned bits;
    unsigned long long n_over;
    CK(cudaMemcpy(&bits, max_bits, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&n_over, over, 8, cudaMemcpyDeviceToHost));
    float ratio;
    std::memcpy(&ratio, &bits, 4);
    std::printf("%-11s %-32s max |x - ref| / (1e-4 + 1e-4 |ref|) = %.4g over %zu outputs, %llu over the gate\n", product,
                what, ratio, n, n_over);
    return n_over;
  };
  // One product: its FP64 reference and cuBLAS FP32 (both through `epilogue`), and the digits.
  auto check = [&](const char* product, cublasOperation_t op_x, cublasOperation_t op_y, int M, int Cn, int R,
                   const double* xd, const float* x, int ldx, const double* yd, const float* y, int ldy, float* out,
                   auto&& digits, auto&& epilogue) {
    const std::size_t n = std::size_t(M) * Cn;
    dgemm(h, op_x, op_y, M, Cn, R, xd, ldx, yd, ldy, ref);
    epilogue(ref, n);
    CK(cudaMemset(out, 0xFF, n * 4));  // poison: NaN where nothing was written
    digits();
    failures += gate(out, n, product, "digits (4, 10 products):") != 0;
    sgemm(h, op_x, op_y, M, Cn, R, x, ldx, y, ldy, f32);
    epilogue(f32, n);
    gate(f32, n, product, "cuBLAS FP32 (calibration):");
  };
  std::printf("accuracy at B = %d against FP64 GEMMs of the same FP32 inputs\n", BMAX);
  // forward: C = W s^T (M = n, columns b, r = k)
  check("forward", T, NT, N, BMAX, K, wd, t.w, K, sd, t.s, K, t.y, [&] { run(h, t, Product::forward, BMAX); },
        [&](auto* c, std::size_t n) { add_bias<<<1024, 256>>>(c, t.bias, n); });
  // d_temb: C = W^T dy^T (M = k, columns b, r = n)
  check("d_temb", NT, NT, K, BMAX, N, wd, t.w, K, dyd, t.dy, N, t.gt, [&] { run(h, t, Product::d_temb, BMAX); },
        [&](auto* c, std::size_t n) { times_silu_grad<<<1024, 256>>>(c, t.temb, n); });
  // the same with per-slice column scales of W (8 slices of 2304 rows) and dy's whole-row scale
  check("d_temb/8", NT, NT, K, BMAX, N, wd, t.w, K, dyd, t.dy, N, t.gt,
        [&] { run(h, t, Product::d_temb_slices, BMAX); },
        [&](auto* c, std::size_t n) { times_silu_grad<<<1024, 256>>>(c, t.temb, n); });
  // grad_weight: C = s^T dy (M = k, columns n, r = b)
  check("grad_weight", NT, T, K, N, BMAX, sd, t.s, K, dyd, t.dy, N, t.gw, [&] { run(h, t, Product::grad_weight, BMAX); },
        [](auto*, std::size_t) {});

  // Batch invariance by exactness: row 0 of y and of grad_temb computed alone against the same
  // row at B = 2048 (poisoned before the lone run).
  const auto row0_alone_equal = [&](Product p, float* out, std::size_t out_elems, int row_elems) {
    std::vector<float> full(row_elems), one(row_elems);
    run(h, t, p, BMAX);
    CK(cudaMemcpy(full.data(), out, row_elems * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemset(out, 0xFF, out_elems * 4));
    run(h, t, p, 1);
    CK(cudaMemcpy(one.data(), out, row_elems * 4, cudaMemcpyDeviceToHost));
    return std::memcmp(one.data(), full.data(), row_elems * 4) == 0;
  };
  const bool y_same = row0_alone_equal(Product::forward, t.y, ny, N);
  const bool gt_same = row0_alone_equal(Product::d_temb, t.gt, nt, K);
  const bool gt8_same = row0_alone_equal(Product::d_temb_slices, t.gt, nt, K);
  failures += !y_same + !gt_same + !gt8_same;
  std::printf("row 0 at B = 1 against B = %d: y bytes %s, grad_temb bytes %s, grad_temb (8 slices) bytes %s\n", BMAX,
              y_same ? "equal" : "DIFFER", gt_same ? "equal" : "DIFFER", gt8_same ? "equal" : "DIFFER");

  // Times (median of 10 after 3 warm-ups; each product whole, its cutting, its GEMMs, and cuBLAS
  // FP32 on the same product).
  struct Times {
    double all, cut, gemms, cublas;
  };
  for (int B : {BMAX, 1}) {
    const auto ms = [](auto&& f) { return median_ms(3, 10, [&](int) { f(); }); };
    const auto times = [&](Product p, auto cublas, int rows) {
      return Times{ms([&] { run(h, t, p, rows); }), ms([&] { cut(t, p, rows); }), ms([&] { gemms(h, t, p, rows); }),
                   ms([&] { cublas(rows); })};
    };
    const Times f = times(Product::forward, [&](int rows) { sgemm(h, T, NT, N, rows, K, t.w, K, t.s, K, f32); }, B);
    const Times d = times(Product::d_temb, [&](int rows) { sgemm(h, NT, NT, K, rows, N, t.w, K, t.dy, N, f32); }, B);
    // grad_weight reduces over the batch: at least 4 rows (cuBLAS's INT8 GEMMs want a reduction
    // length that is a multiple of 4; at B = 1 this times B = 4).
    const Times d8 =
        times(Product::d_temb_slices, [&](int rows) { sgemm(h, NT, NT, K, rows, N, t.w, K, t.dy, N, f32); }, B);
    std::printf("B = %d (ms): d_temb with 8 slices %.4f (cut %.4f, 4 batched INT8 GEMMs %.4f)\n", B, d8.all, d8.cut,
                d8.gemms);
    const int Bg = std::max(B, 4);
    const Times g =
        times(Product::grad_weight, [&](int rows) { sgemm(h, NT, T, K, N, rows, t.s, K, t.dy, N, f32); }, Bg);
    const double all = f.all + d.all + g.all, cublas = f.cublas + d.cublas + g.cublas;
    std::printf("B = %d (ms): forward %.4f (cut %.4f, 4 INT8 GEMMs %.4f) | d_temb %.4f (cut %.4f, GEMMs %.4f) | "
                "grad_weight (B = %d) %.4f (cut %.4f, GEMMs %.4f) | the three %.4f against cuBLAS FP32's GEMMs %.4f + "
                "%.4f + %.4f = %.4f (%.2fx)\n",
                B, f.all, f.cut, f.gemms, d.all, d.cut, d.gemms, Bg, g.all, g.cut, g.gemms, all, f.cublas, d.cublas,
                g.cublas, cublas, all / cublas);
  }
  std::printf("failures: %d\n", failures);
  cublasDestroy(h);
  return failures == 0 ? 0 : 1;
}
