#include "bench_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "bench_fill.hpp"
#include "common/cublas_baseline.hpp"
#include "common/device_memory.hpp"
#include "rlk_commit.hpp"

namespace rlk::bench {
namespace {

using nlohmann::json;
using tools::DeviceBuffer;

struct Options {
  std::string key;
  std::string device = "cuda:0";
  std::vector<std::string> dtypes{"bf16"};
  std::vector<std::int64_t> batches{1, 3, 64, 256, 1024, 2048};
  int warmup = 10;
  int warmup_ms = 100;
  int repeats = 50;
  std::string json_path;
  std::string plot_path;
};

Result<void> cuda(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return {};
  return fail(ErrorCode::runtime_error, what + ": " + cudaGetErrorString(status));
}

Result<void> status(const Status& text) {
  if (text.empty()) return {};
  return fail(ErrorCode::runtime_error, text);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Times `work` `repeats` times with events on `stream` after `warmup` runs and, past those, as many
// more as take `warmup_ms` of wall time (checked every `warmup` runs or every run); median in ms.
// The time-based part is for a case's first round: rlk bench's first fp32 case, right after the bf16
// ones, ran ~20% slow in the rounds after a count-only warm-up on the H200 (its forward at B = 1:
// 0.084 ms in all five rounds of one run, 0.070 in the kernel check; docs/performance.md).
template <class Work>
Result<double> time_median(cudaStream_t stream, int warmup, int warmup_ms, int repeats, Work&& work) {
  std::vector<cudaEvent_t> events(2 * repeats);
  for (auto& e : events) {
    if (auto r = cuda(cudaEventCreate(&e), "cudaEventCreate"); !r) return std::unexpected(r.error());
  }
  const auto warm_start = std::chrono::steady_clock::now();
  int runs = 0;
  for (; runs < warmup; ++runs) {
    if (auto r = work(runs); !r) return std::unexpected(r.error());
  }
  const int check_every = std::max(1, warmup);
  while (warmup_ms > 0) {
    if (auto r = cuda(cudaStreamSynchronize(stream), "synchronize"); !r) return std::unexpected(r.error());
    if (std::chrono::steady_clock::now() - warm_start >= std::chrono::milliseconds(warmup_ms)) break;
    for (int j = 0; j < check_every; ++j, ++runs) {
      if (auto r = work(runs); !r) return std::unexpected(r.error());
    }
  }
  warmup = runs;
  for (int i = 0; i < repeats; ++i) {
    cudaEventRecord(events[2 * i], stream);
    if (auto r = work(warmup + i); !r) return std::unexpected(r.error());
    cudaEventRecord(events[2 * i + 1], stream);
  }
  if (auto r = cuda(cudaStreamSynchronize(stream), "synchronize"); !r) return std::unexpected(r.error());
  std::vector<double> ms(repeats);
  for (int i = 0; i < repeats; ++i) {
    float t = 0;
    cudaEventElapsedTime(&t, events[2 * i], events[2 * i + 1]);
    ms[i] = t;
  }
  for (auto& e : events) cudaEventDestroy(e);
  return median(ms);
}

struct Ceilings {
  double copy_bytes_per_ms = 0;   // bytes read + written per ms, device-to-device copy
  double bf16_flop_per_ms = 0;    // cuBLASLt BF16 GEMM 8192^3 on random data
  double fp32_flop_per_ms = 0;    // cuBLASLt FP32 GEMM 8192^3 (no TF32) on random data
  double tf32_flop_per_ms = 0;    // the same GEMM with TF32 products (CUBLAS_COMPUTE_32F_FAST_TF32)
};

Result<Ceilings> measure_ceilings(const Device& device, cudaStream_t stream, CublasBaseline& cublas) {
  Ceilings c;
  constexpr std::size_t kCopyBytes = 1u << 30;
  auto from = DeviceBuffer::allocate(device, kCopyBytes), to = DeviceBuffer::allocate(device, kCopyBytes);
  if (!from || !to) return std::unexpected((!from ? from : to).error());
  if (auto r = status(fill_uniform(from->data(), kCopyBytes / 4, false, 1, 1.0f, stream)); !r) return std::unexpected(r.error());
  auto copy = time_median(stream, 3, 0, 10, [&](int) {
    return cuda(cudaMemcpyAsync(to->data(), from->data(), kCopyBytes, cudaMemcpyDeviceToDevice, stream), "copy");
  });
  if (!copy) return std::unexpected(copy.error());
  c.copy_bytes_per_ms = 2.0 * kCopyBytes / *copy;

  constexpr std::int64_t n = 8192;
  using Math = CublasBaseline::Math;
  for (Math math : {Math::bf16, Math::fp32, Math::tf32}) {
    const bool bf16 = math == Math::bf16;
    const std::size_t bytes = n * n * (bf16 ? 2 : 4);
    auto a = DeviceBuffer::allocate(device, bytes), b = DeviceBuffer::allocate(device, bytes), out = DeviceBuffer::allocate(device, bytes);
    if (!a || !b || !out) return fail(ErrorCode::runtime_error, "cannot allocate the GEMM ceiling buffers");
    if (auto r = status(fill_uniform(a->data(), n * n, bf16, 2, 1.0f, stream)); !r) return std::unexpected(r.error());
    if (auto r = status(fill_uniform(b->data(), n * n, bf16, 3, 1.0f, stream)); !r) return std::unexpected(r.error());
    auto t = time_median(stream, 2, 0, math == Math::fp32 ? 5 : 10, [&](int) {
      return status(cublas.gemm(math, true, false, n, n, n, a->data(), n, b->data(), n, out->data(), n, nullptr));
    });
    if (!t) return std::unexpected(t.error());
    (bf16 ? c.bf16_flop_per_ms : math == Math::fp32 ? c.fp32_flop_per_ms : c.tf32_flop_per_ms) = 2.0 * n * n * n / *t;
  }
  return c;
}

// One buffer set: the inputs both paths read and the outputs each writes.
struct BufferSet {
  DeviceBuffer temb, weight, bias, grad_out;
  DeviceBuffer out, grad_temb, grad_weight, grad_bias;           // rl-kernel's outputs
  DeviceBuffer b_out, b_grad_temb, b_grad_weight, b_grad_bias;   // the baseline's outputs
  DeviceBuffer silu, grad_silu;                                   // the baseline's intermediates
};

Result<BufferSet> allocate_set(const Device& device, DType dtype, std::int64_t B, std::int64_t K, std::int64_t N,
                               std::uint64_t seed, cudaStream_t stream) {
  const std::size_t e = element_size(dtype);
  auto alloc = [&](std::int64_t count) { return DeviceBuffer::allocate(device, static_cast<std::size_t>(count) * e); };
  std::vector<Result<DeviceBuffer>> b;
  for (std::int64_t count : {B * K, N * K, N, B * N, B * N, B * K, N * K, N, B * N, B * K, N * K, N, B * K, B * K}) b.push_back(alloc(count));
  for (auto& r : b) {
    if (!r) return std::unexpected(r.error().with_context("allocating a benchmark buffer set"));
  }
  BufferSet set{std::move(*b[0]), std::move(*b[1]), std::move(*b[2]),  std::move(*b[3]),  std::move(*b[4]),
                std::move(*b[5]), std::move(*b[6]), std::move(*b[7]),  std::move(*b[8]),  std::move(*b[9]),
                std::move(*b[10]), std::move(*b[11]), std::move(*b[12]), std::move(*b[13])};
  const bool bf16 = dtype == DType::bfloat16;
  // The spec's reference distributions: temb ~ std 2, weights and bias ~ std 0.02, grad_out ~ std 1.
  for (auto [buffer, count, stddev, salt] : {std::tuple{&set.temb, B * K, 2.0f, 1}, {&set.weight, N * K, 0.02f, 2},
                                             {&set.bias, N, 0.02f, 3}, {&set.grad_out, B * N, 1.0f, 4}}) {
    if (auto r = status(fill_uniform(buffer->data(), count, bf16, seed * 16 + salt, stddev, stream)); !r) return std::unexpected(r.error());
  }
  return set;
}

void progress(const std::string& line, bool last) {
  static const bool terminal = isatty(fileno(stderr));
  if (terminal) std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), last ? "\n" : "");
  else std::fprintf(stderr, "%s\n", line.c_str());
}

Result<json> run_bench(Registry& registry, const Options& options) {
  auto device = parse_device(options.device);
  if (!device) return std::unexpected(device.error().with_context("--device"));
  if (device->platform != Platform::cuda) return fail(ErrorCode::invalid_argument, "--device: rlk bench times CUDA devices (cuda:N)");
  auto op = registry.get_op(options.key, *device);
  if (!op) return std::unexpected(op.error());
  const OpSpec& spec = op->spec();
  if (spec.key != "qwenimage_adaln_mod_projection") {
    return fail(ErrorCode::not_implemented, "--key: rlk bench has a cuBLAS baseline for qwenimage_adaln_mod_projection only");
  }
  const std::int64_t K = spec.argument("temb")->shape[1].extent, N = spec.argument("weight")->shape[0].extent;
  if (auto r = cuda(cudaSetDevice(device->index), "cudaSetDevice"); !r) return std::unexpected(r.error());
  auto stream_holder = tools::Stream::create(*device);
  if (!stream_holder) return std::unexpected(stream_holder.error());
  const auto stream = static_cast<cudaStream_t>(stream_holder->handle());
  Status error;
  auto cublas = CublasBaseline::create(stream, error);
  if (!cublas) return fail(ErrorCode::runtime_error, error);

  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, device->index);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  progress("rlk bench: measuring ceilings (copy, BF16, FP32 and TF32 GEMM)", false);
  auto ceilings = measure_ceilings(*device, stream, *cublas);
  if (!ceilings) return std::unexpected(ceilings.error());

  json report;
  report["schema"] = "rlk-bench/1";
  report["key"] = spec.key;
  report["spec_sha256"] = spec.sha256;
  report["environment"] = {{"device", properties.name},
                           {"compute_capability", std::to_string(properties.major) + "." + std::to_string(properties.minor)},
                           {"l2_bytes", properties.l2CacheSize},
                           {"driver", driver},
                           {"cuda_runtime", runtime},
                           {"rlk_commit", RLK_GIT_COMMIT},
                           {"implementation", op->implementation()}};
  report["method"] = {{"warmup", options.warmup},
                      {"warmup_ms", options.warmup_ms},
                      {"repeats", options.repeats},
                      {"statistic", "median over rounds of each round's median CUDA-event time; *_rounds_ms lists the rounds' medians"},
                      {"interleaved", "each round times every path once, rl-kernel and cuBLAS alternating"}};
  report["ceilings"] = {{"copy_TB_per_s", ceilings->copy_bytes_per_ms / 1e9},
                        {"bf16_gemm_TFLOP_per_s", ceilings->bf16_flop_per_ms / 1e9},
                        {"fp32_gemm_TFLOP_per_s", ceilings->fp32_flop_per_ms / 1e9},
                        {"tf32_gemm_TFLOP_per_s", ceilings->tf32_flop_per_ms / 1e9}};
  json cases = json::array();
  const std::size_t total = options.dtypes.size() * options.batches.size();
  const auto started = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (const auto& dtype_name : options.dtypes) {
    auto dtype = parse_dtype(dtype_name);
    if (!dtype || spec.numeric(*dtype) == nullptr) return fail(ErrorCode::invalid_argument, "--dtype " + dtype_name + ": expected bf16 or fp32");
    const std::size_t e = element_size(*dtype);
    for (std::int64_t B : options.batches) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      progress("rlk bench: " + std::string(to_string(*dtype)) + " B=" + std::to_string(B) + " (" + std::to_string(done + 1) + "/" +
                   std::to_string(total) + ", " + std::to_string(static_cast<int>(elapsed)) + " s)",
               false);
      // Enough buffer sets that the L2 cannot hold the previous iteration's data.
      const double set_bytes = static_cast<double>(e) * (2.0 * N * K + 2.0 * B * K + 2.0 * B * N);
      const int sets = std::max(2, static_cast<int>(std::ceil(3.0 * properties.l2CacheSize / set_bytes)));
      std::vector<BufferSet> buffers;
      for (int s = 0; s < sets; ++s) {
        auto set = allocate_set(*device, *dtype, B, K, N, static_cast<std::uint64_t>(s + 1), stream);
        if (!set) return std::unexpected(set.error());
        buffers.push_back(std::move(*set));
      }
      std::vector<std::int64_t> sk{B, K}, nk{N, K}, n1{N}, bn{B, N};
      auto views = [&](BufferSet& s) {
        auto v = [&](DeviceBuffer& b, std::vector<std::int64_t>& shape) { return *b.view(*dtype, shape); };
        return std::pair<TensorMap, TensorMap>{
            {{"temb", v(s.temb, sk)}, {"weight", v(s.weight, nk)}, {"bias", v(s.bias, n1)}, {"out", v(s.out, bn)}},
            {{"temb", v(s.temb, sk)}, {"weight", v(s.weight, nk)}, {"grad_out", v(s.grad_out, bn)},
             {"grad_temb", v(s.grad_temb, sk)}, {"grad_weight", v(s.grad_weight, nk)}, {"grad_bias", v(s.grad_bias, n1)}}};
      };
      std::vector<std::pair<TensorMap, TensorMap>> args;
      for (auto& s : buffers) args.push_back(views(s));
      auto fwd_ws = op->workspace_bytes(Direction::forward, args[0].first);
      auto bwd_ws = op->workspace_bytes(Direction::backward, args[0].second);
      if (!fwd_ws || !bwd_ws) return std::unexpected((!fwd_ws ? fwd_ws : bwd_ws).error());
      const std::uint64_t ws_bytes = std::max<std::uint64_t>({*fwd_ws, *bwd_ws, 256});
      auto workspace = DeviceBuffer::allocate(*device, ws_bytes);
      if (!workspace) return std::unexpected(workspace.error());
      const RunOptions run{stream, workspace->data(), ws_bytes};
      const BaselineProblem problem{*dtype == DType::bfloat16, B, K, N};
      auto baseline_tensors = [&](BufferSet& s) {
        return BaselineTensors{s.temb.data(),     s.weight.data(),        s.bias.data(),          s.b_out.data(), s.grad_out.data(),
                               s.b_grad_temb.data(), s.b_grad_weight.data(), s.b_grad_bias.data(), s.silu.data(), s.grad_silu.data()};
      };
      auto rlk_forward = [&](int i) { return op->forward(args[i % sets].first, run); };
      auto rlk_both = [&](int i) -> Result<void> {
        if (auto r = op->forward(args[i % sets].first, run); !r) return r;
        return op->backward(args[i % sets].second, run);
      };
      auto cublas_forward = [&](int i) { return status(cublas->forward(problem, baseline_tensors(buffers[i % sets]))); };
      auto cublas_both = [&](int i) -> Result<void> {
        if (auto r = status(cublas->forward(problem, baseline_tensors(buffers[i % sets]))); !r) return r;
        return status(cublas->backward(problem, baseline_tensors(buffers[i % sets])));
      };
      // Interleave: each round times every path once, so drift (clocks, temperature) hits all alike.
      std::vector<double> t_rf, t_cf, t_rb, t_cb;
      constexpr int kRounds = 5;
      const int per_round = std::max(1, options.repeats / kRounds);
      for (int round = 0; round < kRounds; ++round) {
        for (auto [times, work] : {std::pair{&t_rf, std::function<Result<void>(int)>(rlk_forward)},
                                   {&t_cf, std::function<Result<void>(int)>(cublas_forward)},
                                   {&t_rb, std::function<Result<void>(int)>(rlk_both)},
                                   {&t_cb, std::function<Result<void>(int)>(cublas_both)}}) {
          auto t = time_median(stream, round == 0 ? options.warmup : 2, round == 0 ? options.warmup_ms : 0, per_round, work);
          if (!t) return std::unexpected(t.error().with_context(std::string(to_string(*dtype)) + " B=" + std::to_string(B)));
          times->push_back(*t);
        }
      }
      const double flop = 2.0 * B * N * K;
      const double rate = *dtype == DType::bfloat16 ? ceilings->bf16_flop_per_ms : ceilings->fp32_flop_per_ms;
      const double fwd_bytes = e * (1.0 * N * K + B * K + N + 1.0 * B * N);
      const double both_bytes = e * (2.0 * N * K + 1.0 * N * K + 2.0 * B * K + 2.0 * N + 2.0 * B * N + 1.0 * B * K);
      const double floor_fwd = std::max(fwd_bytes / ceilings->copy_bytes_per_ms, flop / rate);
      const double floor_both = std::max(both_bytes / ceilings->copy_bytes_per_ms, 3 * flop / rate);
      // FP32 on tensor cores: the contract's three TF32 products (hi*lo, lo*hi, hi*hi) per FP32
      // product at the measured TF32 rate, the floor of any 3xTF32 kernel (the FP32-core floor above
      // is the issue's; the tensor-core path runs below it).
      const bool fp32 = *dtype != DType::bfloat16;
      const double tc_fwd = std::max(fwd_bytes / ceilings->copy_bytes_per_ms, 3 * flop / ceilings->tf32_flop_per_ms);
      const double tc_both = std::max(both_bytes / ceilings->copy_bytes_per_ms, 9 * flop / ceilings->tf32_flop_per_ms);
      const double io_bytes = e * (2.0 * N * K + N + 2.0 * B * K + 2.0 * B * N + B * K + N);  // inputs + outputs
      const double rlk_fwd = median(t_rf), rlk_both_ms = median(t_rb), cub_fwd = median(t_cf), cub_both = median(t_cb);
      cases.push_back({{"dtype", to_string(*dtype)},
                       {"B", B},
                       {"rlk", {{"fwd_ms", rlk_fwd}, {"fwd_bwd_ms", rlk_both_ms}, {"device_MiB", (io_bytes + ws_bytes) / 1048576.0},
                                {"fwd_rounds_ms", t_rf}, {"fwd_bwd_rounds_ms", t_rb}}},
                       {"cublas", {{"fwd_ms", cub_fwd}, {"fwd_bwd_ms", cub_both},
                                   {"device_MiB", (io_bytes + 2.0 * e * B * K + cublas->workspace_bytes()) / 1048576.0},
                                   {"fwd_rounds_ms", t_cf}, {"fwd_bwd_rounds_ms", t_cb}}},
                       {"floor", {{"fwd_ms", floor_fwd}, {"fwd_bwd_ms", floor_both}, {"fwd_bytes", fwd_bytes},
                                  {"fwd_bwd_bytes", both_bytes}, {"fwd_flop", flop}}},
                       {"floor_3xtf32", fp32 ? json{{"fwd_ms", tc_fwd}, {"fwd_bwd_ms", tc_both}} : json(nullptr)},
                       {"rlk_over_cublas", {{"fwd", rlk_fwd / cub_fwd}, {"fwd_bwd", rlk_both_ms / cub_both}}},
                       {"rlk_fraction_of_floor", {{"fwd", floor_fwd / rlk_fwd}, {"fwd_bwd", floor_both / rlk_both_ms}}},
                       {"rlk_fraction_of_floor_3xtf32",
                        fp32 ? json{{"fwd", tc_fwd / rlk_fwd}, {"fwd_bwd", tc_both / rlk_both_ms}} : json(nullptr)},
                       {"buffer_sets", sets}});
      ++done;
    }
  }
  progress("rlk bench: done", true);
  report["cases"] = cases;
  return report;
}

// (max - min) / median of the rounds' medians, in percent: how far apart the rounds were.
double spread_percent(const json& rounds, double median_ms) {
  std::vector<double> v = rounds.get<std::vector<double>>();
  if (v.empty() || median_ms <= 0) return 0.0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return 100.0 * (*hi - *lo) / median_ms;
}

void print_table(const json& report) {
  std::printf("%-9s %5s | %9s %9s %7s | %9s %9s %7s | %9s %9s | %9s %9s | %s\n", "dtype", "B", "rlk fwd", "cuBLAS", "ratio",
              "rlk f+b", "cuBLAS", "ratio", "floor f", "floor f+b", "3xTF32 f", "3xTF32 f+b", "rounds' spread rlk fwd, f+b");
  for (const auto& c : report["cases"]) {
    const double rlk_fwd = c["rlk"]["fwd_ms"].get<double>(), rlk_both = c["rlk"]["fwd_bwd_ms"].get<double>();
    const auto& tc = c["floor_3xtf32"];
    char tc_text[32] = "        -         -";
    if (!tc.is_null()) std::snprintf(tc_text, sizeof tc_text, "%9.4f %9.4f", tc["fwd_ms"].get<double>(), tc["fwd_bwd_ms"].get<double>());
    std::printf("%-9s %5lld | %9.4f %9.4f %7.3f | %9.4f %9.4f %7.3f | %9.4f %9.4f | %s | %4.1f%% %4.1f%%\n",
                c["dtype"].get<std::string>().c_str(), static_cast<long long>(c["B"].get<std::int64_t>()), rlk_fwd,
                c["cublas"]["fwd_ms"].get<double>(), c["rlk_over_cublas"]["fwd"].get<double>(), rlk_both,
                c["cublas"]["fwd_bwd_ms"].get<double>(), c["rlk_over_cublas"]["fwd_bwd"].get<double>(),
                c["floor"]["fwd_ms"].get<double>(), c["floor"]["fwd_bwd_ms"].get<double>(), tc_text,
                spread_percent(c["rlk"]["fwd_rounds_ms"], rlk_fwd), spread_percent(c["rlk"]["fwd_bwd_rounds_ms"], rlk_both));
  }
  const auto& ceilings = report["ceilings"];
  std::printf("ceilings: copy %.2f TB/s, BF16 GEMM %.1f TFLOP/s, FP32 GEMM %.1f TFLOP/s, TF32 GEMM %.1f TFLOP/s (times in ms, medians)\n",
              ceilings["copy_TB_per_s"].get<double>(), ceilings["bf16_gemm_TFLOP_per_s"].get<double>(),
              ceilings["fp32_gemm_TFLOP_per_s"].get<double>(), ceilings["tf32_gemm_TFLOP_per_s"].get<double>());
}

}  // namespace

void add_bench_command(CLI::App& program, cli::Command& selected) {
  auto options = std::make_shared<Options>();
  CLI::App* bench = program.add_subcommand("bench", "Time an operator against the cuBLAS baseline on a GPU, with the floors");
  bench->add_option("key", options->key, "operator key")->required();
  bench->add_option("--device", options->device, "CUDA device, e.g. cuda:0")->capture_default_str();
  bench->add_option("--dtype", options->dtypes, "bf16 and/or fp32 (comma-separated)")->delimiter(',')->capture_default_str();
  bench->add_option("--batch", options->batches, "batch sizes (comma-separated)")->delimiter(',')->capture_default_str();
  bench->add_option("--warmup", options->warmup, "warm-up runs per path")->capture_default_str()->check(CLI::Range(0, 100000));
  bench->add_option("--warmup-ms", options->warmup_ms,
                    "and at least this much wall time of warm-up runs per path before a case's first round")
      ->capture_default_str()
      ->check(CLI::Range(0, 600000));
  bench->add_option("--repeats", options->repeats, "timed runs per path (median taken)")->capture_default_str()->check(CLI::Range(5, 100000));
  bench->add_option("--json", options->json_path, "write the report as JSON");
  bench->add_option("--plot", options->plot_path, "write a PNG plot of time against B (python3 + matplotlib)");
  bench->callback([options, &selected] {
    selected = [options](Registry& registry) -> Result<void> {
      auto report = run_bench(registry, *options);
      if (!report) return std::unexpected(report.error());
      print_table(*report);
      std::string json_path = options->json_path;
      if (json_path.empty() && !options->plot_path.empty()) json_path = options->plot_path + ".json";
      if (!json_path.empty()) {
        std::ofstream(json_path) << report->dump(2) << '\n';
        if (!std::ifstream(json_path)) return fail(ErrorCode::io_error, "--json: cannot write " + json_path);
      }
      if (!options->plot_path.empty()) {
        const std::string command = "python3 '" RLK_BENCH_PLOT_SCRIPT "' '" + json_path + "' '" + options->plot_path + "'";
        if (std::system(command.c_str()) != 0) return fail(ErrorCode::runtime_error, "--plot: `" + command + "` failed");
      }
      return {};
    };
  });
}

}  // namespace rlk::bench
