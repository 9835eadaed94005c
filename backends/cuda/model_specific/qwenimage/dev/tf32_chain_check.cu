// Do the TF32 tensor-core chains of mma.sync and of wgmma give the same bytes? A 3xTF32 FP32
// contract (docs/notes/fp32-on-tensor-cores.md) would run mma.sync m16n8k8 chains in the small-B
// streaming kernels and wgmma m64nNk8 chains in the large-B GEMMs, and could be batch-invariant
// only if both add each k8 step's products into the FP32 accumulator the same way. (For BF16 this
// library relies on mma.sync and wgmma agreeing, and test_kernel_paths checks it.) Development
// harness, not part of the operator.
//
// One warpgroup per trial computes C (64 x N) = sum over K / 8 steps of A (64 x 8) B^T (8 x N), one
// instruction per k8 step into one accumulator, three ways:
//   - mma.sync.m16n8k8 tf32 (each warp 16 rows, N / 8 column blocks),
//   - wgmma m64n8k8 tf32, A from registers, B from shared memory (K-major, no swizzle),
//   - wgmma m64n64k8 the same way (N = 64: the columns a large-B tile carries),
// on TF32-valued inputs (low 13 mantissa bits zero) of random sign and exponents spread over
// [-12, 12], so that products are aligned and truncated against accumulators of other magnitudes.
// Prints the number of differing output bytes between the three, and the largest error of each
// against an FP64 sum (to tell a layout mistake, which would be large, from rounding).
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/tf32_chain_check.cu -o tf32_chain_check
// Run: ./tf32_chain_check
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "experiment_common.cuh"
#include "tf32.cuh"

namespace {

constexpr int kM = 64, kN = 64, kK = 3072, kSteps = kK / 8;
constexpr int kTrials = 64;

// The A fragment of k8 step k (a multiple of 8) for rows r0 = 16 warp + g and r0 + 8, columns k + t
// and k + t + 4: mma.sync m16n8k8's layout, which wgmma's register A has per warp.
struct AFrag {
  std::uint32_t r[4];
};
__device__ AFrag a_frag(const float* A, int r0, int k, int t) {
  return {{__float_as_uint(A[r0 * kK + k + t]), __float_as_uint(A[(r0 + 8) * kK + k + t]),
           __float_as_uint(A[r0 * kK + k + t + 4]), __float_as_uint(A[(r0 + 8) * kK + k + t + 4])}};
}
// Both accumulators' layout: value q of column block nb is row r0 + 8 (q / 2), column 8 nb + 2 t + q % 2
// (for wgmma m64nN, value 4 nb + q of the instruction).
__device__ void store_acc(float* C, const float (&acc)[kN / 8][4], int r0, int t) {
  for (int nb = 0; nb < kN / 8; ++nb)
    for (int q = 0; q < 4; ++q) C[(r0 + 8 * (q / 2)) * kN + 8 * nb + 2 * t + q % 2] = acc[nb][q];
}

// ---- mma.sync m16n8k8: warp w rows 16 w .. 16 w + 15, all kN columns in kN / 8 blocks ----
__global__ void chain_mma_sync(const float* a, const float* b, float* c) {
  const float* A = a + std::size_t(blockIdx.x) * kM * kK;
  const float* B = b + std::size_t(blockIdx.x) * kN * kK;
  float* C = c + std::size_t(blockIdx.x) * kM * kN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = 16 * warp + g;
  float acc[kN / 8][4] = {};
  for (int s = 0; s < kSteps; ++s) {
    const int k = 8 * s;
    const AFrag a = a_frag(A, r0, k, t);
    for (int nb = 0; nb < kN / 8; ++nb) {
      const std::uint32_t b0 = __float_as_uint(B[(8 * nb + g) * kK + k + t]);
      const std::uint32_t b1 = __float_as_uint(B[(8 * nb + g) * kK + k + t + 4]);
      mma_tf32(acc[nb], a.r, b0, b1);
    }
  }
  store_acc(C, acc, r0, t);
}

// ---- wgmma: A from registers (the mma.sync A layout per warp), B (n x k8) from shared memory ----
// K-major, no swizzle: core matrices of 8 rows n x 16 bytes (4 k), stored [k half][n][4]; the two
// k halves kN * 16 bytes apart (leading byte offset), 8-row groups of n 128 bytes apart (stride).
__device__ std::uint64_t b_desc(const void* smem) {
  const std::uint64_t addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  const std::uint64_t lbo = (kN * 16) >> 4, sbo = 128 >> 4;
  return ((addr >> 4) & 0x3fff) | (lbo << 16) | (sbo << 32);  // base offset 0, layout type 0
}

template <int kWN>  // 8 or 64 columns per instruction
__global__ void chain_wgmma(const float* a, const float* b, float* c) {
  __shared__ __align__(128) float bs[2][kN][4];
  const float* A = a + std::size_t(blockIdx.x) * kM * kK;
  const float* B = b + std::size_t(blockIdx.x) * kN * kK;
  float* C = c + std::size_t(blockIdx.x) * kM * kN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = 16 * warp + g;
  float acc[kN / 8][4] = {};  // column block nb: the n8 instruction's 4 values, or the n64 one's 4 nb .. 4 nb + 3
  for (int s = 0; s < kSteps; ++s) {
    const int k = 8 * s;
    __syncthreads();  // the previous step's wgmma has read bs (wait_group 0 below)
    for (int i = threadIdx.x; i < kN * 8; i += blockDim.x) {
      const int n = i / 8, kk = i % 8;
      bs[kk / 4][n][kk % 4] = B[n * kK + k + kk];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const AFrag a = a_frag(A, r0, k, t);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    if constexpr (kWN == 8) {
      for (int nb = 0; nb < kN / 8; ++nb) {
        const std::uint64_t desc = b_desc(&bs[0][8 * nb][0]);
        asm volatile(
            "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1, 1, 1;"
            : "+f"(acc[nb][0]), "+f"(acc[nb][1]), "+f"(acc[nb][2]), "+f"(acc[nb][3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(desc));
      }
    } else {
      const std::uint64_t desc = b_desc(&bs[0][0][0]);
      float* d = &acc[0][0];
      asm volatile(
          "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
          "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
          "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1;"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
            "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
            "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
            "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(desc));
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  store_acc(C, acc, r0, t);
}

// A TF32 value (low 13 mantissa bits zero) of random sign and exponent in [-12, 12].
float tf32_value(std::mt19937& gen) {
  std::uniform_int_distribution<int> e(-12, 12), m(0, (1 << 10) - 1), sign(0, 1);
  const float v = std::ldexp(1.0f + m(gen) / 1024.0f, e(gen));
  return sign(gen) ? -v : v;
}

}  // namespace

int main() {
  const std::size_t na = std::size_t(kTrials) * kM * kK, nb = std::size_t(kTrials) * kN * kK,
                    nc = std::size_t(kTrials) * kM * kN;
  std::vector<float> a(na), b(nb);
  std::mt19937 gen(2026);
  for (auto& x : a) x = tf32_value(gen);
  for (auto& x : b) x = tf32_value(gen);
  float *da, *db, *c_sync, *c_w8, *c_w64;
  CK(cudaMalloc(&da, na * 4));
  CK(cudaMalloc(&db, nb * 4));
  for (float** p : {&c_sync, &c_w8, &c_w64}) {
    CK(cudaMalloc(p, nc * 4));
    CK(cudaMemset(*p, 0xff, nc * 4));  // poison: an unwritten element is a NaN that differs
  }
  CK(cudaMemcpy(da, a.data(), na * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), nb * 4, cudaMemcpyHostToDevice));
  chain_mma_sync<<<kTrials, 128>>>(da, db, c_sync);
  chain_wgmma<8><<<kTrials, 128>>>(da, db, c_w8);
  chain_wgmma<64><<<kTrials, 128>>>(da, db, c_w64);
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  std::vector<float> s(nc), w8(nc), w64(nc);
  CK(cudaMemcpy(s.data(), c_sync, nc * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(w8.data(), c_w8, nc * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(w64.data(), c_w64, nc * 4, cudaMemcpyDeviceToHost));

  // FP64 reference and each element's sum of |products| (the scale of its rounding errors).
  std::vector<double> ref(nc), mag(nc);
  for (int tr = 0; tr < kTrials; ++tr)
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) {
        double acc = 0.0, abs_sum = 0.0;
        for (int k = 0; k < kK; ++k) {
          const double p = double(a[(std::size_t(tr) * kM + m) * kK + k]) * double(b[(std::size_t(tr) * kN + n) * kK + k]);
          acc += p;
          abs_sum += std::fabs(p);
        }
        ref[(std::size_t(tr) * kM + m) * kN + n] = acc;
        mag[(std::size_t(tr) * kM + m) * kN + n] = abs_sum;
      }
  auto differing = [&](const std::vector<float>& x, const std::vector<float>& y) {
    std::size_t d = 0;
    for (std::size_t i = 0; i < nc; ++i) d += std::memcmp(&x[i], &y[i], 4) != 0;
    return d;
  };
  // Largest |x - ref| / sum |products| of the element: rounding (the tensor cores' truncating
  // accumulation over the 384 steps) gives about 1e-5, a layout mistake order 1.
  auto worst = [&](const std::vector<float>& x) {
    double w = 0.0;
    for (std::size_t i = 0; i < nc; ++i) w = std::max(w, std::fabs(double(x[i]) - ref[i]) / mag[i]);
    return w;
  };
  std::printf("%d trials of C (64 x 64) = %d k8 steps of A B^T, TF32 inputs with exponents in [-12, 12]\n", kTrials,
              kSteps);
  const std::size_t sync_n8 = differing(s, w8), sync_n64 = differing(s, w64);
  std::printf("differing elements of %zu: mma.sync vs wgmma n8 %zu, mma.sync vs wgmma n64 %zu, wgmma n8 vs n64 %zu\n", nc,
              sync_n8, sync_n64, differing(w8, w64));
  std::printf("largest |x - fp64| / sum |products|: mma.sync %.3g, wgmma n8 %.3g, wgmma n64 %.3g\n", worst(s), worst(w8),
              worst(w64));
  const bool same = sync_n8 == 0 && sync_n64 == 0;
  std::printf("%s\n", same ? "the three chains give the same bytes" : "THE CHAINS DIFFER");
  return same ? 0 : 1;
}
