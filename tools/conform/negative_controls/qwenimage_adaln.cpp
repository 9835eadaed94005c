#include "negative_controls/qwenimage_adaln.hpp"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "rlk/bfloat16.hpp"

#ifdef RLK_WITH_CUDA
#include "common/cublas_baseline.hpp"
#include "common/device_memory.hpp"
#endif

namespace rlk::conform::qwenimage {
namespace {

struct Forward {
  const DLTensor* temb;
  const DLTensor* weight;
  const DLTensor* bias;
  const DLTensor* out;
};

Result<Forward> forward_args(Direction direction, const TensorMap& args) {
  if (direction != Direction::forward) return fail(ErrorCode::not_implemented, "the negative control implements forward only");
  const char* names[] = {"temb", "weight", "bias", "out"};
  for (const char* name : names) {
    if (!args.contains(name)) return fail(ErrorCode::invalid_argument, std::string("negative control: no argument '") + name + "'");
  }
  return Forward{&args.at("temb"), &args.at("weight"), &args.at("bias"), &args.at("out")};
}

float load(const DLTensor& t, std::int64_t i) {
  if (t.dtype.code == kDLBfloat) return to_float(static_cast<const bfloat16*>(t.data)[i]);
  return static_cast<const float*>(t.data)[i];
}

void store(const DLTensor& t, std::int64_t i, float v) {
  if (t.dtype.code == kDLBfloat) static_cast<bfloat16*>(t.data)[i] = to_bfloat16(v);
  else static_cast<float*>(t.data)[i] = v;
}

Result<void> blocked_forward(Direction direction, const TensorMap& args) {
  auto f = forward_args(direction, args);
  if (!f) return std::unexpected(f.error());
  const std::int64_t B = f->temb->shape[0];
  const std::int64_t K = f->temb->shape[1];
  const std::int64_t N = f->weight->shape[0];
  const std::int64_t blocks = 1 + B % 7;
  std::vector<float> silu(static_cast<std::size_t>(B * K));
  std::vector<float> weight(static_cast<std::size_t>(N * K));
  for (std::int64_t i = 0; i < B * K; ++i) {
    const float x = load(*f->temb, i);
    silu[i] = x / (1.0f + std::exp(-x));
    if (f->temb->dtype.code == kDLBfloat) silu[i] = round_to_bfloat16(silu[i]);
  }
  for (std::int64_t i = 0; i < N * K; ++i) weight[i] = load(*f->weight, i);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::int64_t n = t; n < N; n += threads) {
        for (std::int64_t b = 0; b < B; ++b) {
          float total = load(*f->bias, n);
          for (std::int64_t block = 0; block < blocks; ++block) {
            float partial = 0;
            for (std::int64_t k = block * K / blocks; k < (block + 1) * K / blocks; ++k) partial += silu[b * K + k] * weight[n * K + k];
            total += partial;
          }
          store(*f->out, b * N + n, total);
        }
      }
    });
  }
  return {};
}

}  // namespace

Implementation adaln_blocked_cpu(const Device& device) {
  return Implementation{"blocked CPU sum, 1 + B mod 7 blocks per dot product", device,
                        [](Direction direction, const TensorMap& args, const RunOptions&) { return blocked_forward(direction, args); },
                        [](Direction, const TensorMap&) -> Result<std::uint64_t> { return 0; }};
}

#ifdef RLK_WITH_CUDA
namespace {

// The baseline (tools/common/cublas_baseline.hpp) made for the stream of the call.
struct CublasState {
  cudaStream_t stream = nullptr;
  std::unique_ptr<bench::CublasBaseline> baseline;
};

Result<void> cublas_run(CublasState& state, const Device& device, Direction direction, const TensorMap& args,
                        const RunOptions& options) {
  const auto stream = static_cast<cudaStream_t>(options.stream);
  if (!state.baseline || state.stream != stream) {
    bench::Status error;
    state.baseline = bench::CublasBaseline::create(stream, error);
    state.stream = stream;
    if (!state.baseline) return fail(ErrorCode::runtime_error, "cuBLAS baseline: " + error);
  }
  const DLTensor& temb = args.at("temb");
  const DLTensor& weight = args.at("weight");
  const bench::BaselineProblem problem{temb.dtype.code == kDLBfloat, temb.shape[0], temb.shape[1], weight.shape[0]};
  const std::size_t element = temb.dtype.bits / 8;
  // The baseline's own intermediates, as autograd keeps them; backward recomputes SiLU through
  // a forward into scratch outputs with a zero bias.
  std::vector<tools::DeviceBuffer> scratch;
  auto allocate = [&](std::int64_t elements, bool zero) -> Result<void*> {
    auto buffer = tools::DeviceBuffer::allocate(device, static_cast<std::size_t>(elements) * element);
    if (!buffer) return std::unexpected(buffer.error());
    if (zero) {
      if (auto r = buffer->fill(std::byte{0}); !r) return std::unexpected(r.error());
    }
    scratch.push_back(std::move(*buffer));
    return scratch.back().data();
  };
  bench::BaselineTensors t{};
  t.temb = temb.data;
  t.weight = weight.data;
  auto silu = allocate(problem.B * problem.K, false);
  if (!silu) return std::unexpected(silu.error());
  t.silu = *silu;
  if (direction == Direction::forward) {
    t.bias = args.at("bias").data;
    t.out = args.at("out").data;
  } else {
    auto bias = allocate(problem.N, true);
    auto out = allocate(problem.B * problem.N, false);
    auto grad_silu = allocate(problem.B * problem.K, false);
    for (const auto* r : {&bias, &out, &grad_silu}) {
      if (!*r) return std::unexpected(r->error());
    }
    t.bias = *bias;
    t.out = *out;
    t.grad_silu = *grad_silu;
    t.grad_out = args.at("grad_out").data;
    t.grad_temb = args.at("grad_temb").data;
    t.grad_weight = args.at("grad_weight").data;
    t.grad_bias = args.at("grad_bias").data;
  }
  bench::Status status = state.baseline->forward(problem, t);
  if (status.empty() && direction == Direction::backward) status = state.baseline->backward(problem, t);
  if (status.empty() && cudaStreamSynchronize(stream) != cudaSuccess) status = "cudaStreamSynchronize failed";
  if (!status.empty()) return fail(ErrorCode::runtime_error, "cuBLAS baseline: " + status);
  return {};
}

}  // namespace
#endif

Result<Implementation> adaln_cublas(const Device& device) {
#ifdef RLK_WITH_CUDA
  auto state = std::make_shared<CublasState>();
  return Implementation{"cuBLASLt baseline of rlk bench, default heuristics", device,
                        [state, device](Direction direction, const TensorMap& args, const RunOptions& options) {
                          return cublas_run(*state, device, direction, args, options);
                        },
                        [](Direction, const TensorMap&) -> Result<std::uint64_t> { return 0; }};
#else
  return fail(ErrorCode::not_implemented, to_string(device) + ": the cuBLAS negative control needs a build with RLK_BUILD_CUDA=ON");
#endif
}

}  // namespace rlk::conform::qwenimage
