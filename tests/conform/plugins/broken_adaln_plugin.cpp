// A CPU plugin serving qwenimage_adaln_mod_projection (float32 only) for the conformance
// runner's tests. Each build (CMake define BROKEN_*) breaks it in one way the runner must
// catch with the right gate; without a define it is a correct, batch-invariant operator:
// every sum is accumulated in double in a fixed order and rounded once.
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "rlk/plugin_sdk.hpp"

namespace {

struct Tensors {
  const float* temb;
  const float* weight;
  std::int64_t B, K, N;
};

Tensors common(const rlk_call& call) {
  const DLTensor& temb = rlk::sdk::argument(call, "temb");
  const DLTensor& weight = rlk::sdk::argument(call, "weight");
  if (temb.dtype.code != kDLFloat || temb.dtype.bits != 32) {
    throw rlk::sdk::PluginError{RLK_STATUS_UNSUPPORTED, "the test plugin runs float32 only"};
  }
  return {static_cast<const float*>(rlk::sdk::data_of(temb)), static_cast<const float*>(rlk::sdk::data_of(weight)), temb.shape[0],
          temb.shape[1], weight.shape[0]};
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

double silu_derivative(double x) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  return sigmoid * (1.0 + x * (1.0 - sigmoid));
}

// Rounds once to float; each broken build changes this one step.
float finish(double value, std::int64_t B) {
  auto result = static_cast<float>(value);
#if defined(BROKEN_BATCH_DEPENDENT)
  // Accurate to an ulp, but the bytes depend on the batch size.
  if (B > 1) result = std::nextafter(result, INFINITY);
#elif defined(BROKEN_INACCURATE)
  result *= 1.01f;
#endif
  (void)B;
  return result;
}

template <class Body>
void parallel_for(std::int64_t count, Body body) {
  const std::int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::jthread> workers;
  for (std::int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::int64_t i = t; i < count; i += threads) body(i);
    });
  }
}

void forward(const rlk_call& call) {
  const Tensors t = common(call);
  const auto* bias = static_cast<const float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "bias")));
  auto* out = static_cast<float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "out")));
  std::vector<float> activation(static_cast<std::size_t>(t.B * t.K));
  for (std::int64_t i = 0; i < t.B * t.K; ++i) activation[i] = silu(t.temb[i]);
  parallel_for(t.N, [&](std::int64_t n) {
    for (std::int64_t b = 0; b < t.B; ++b) {
      double total = bias[n];
      for (std::int64_t k = 0; k < t.K; ++k) total += static_cast<double>(activation[b * t.K + k]) * t.weight[n * t.K + k];
      out[b * t.N + n] = finish(total, t.B);
    }
  });
#if defined(BROKEN_WRITES_PAST_END)
  out[t.B * t.N] = 0.0f;
#endif
}

void backward(const rlk_call& call) {
  const Tensors t = common(call);
  const auto* dy = static_cast<const float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "grad_out")));
  auto* grad_temb = static_cast<float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "grad_temb")));
  auto* grad_weight = static_cast<float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "grad_weight")));
  auto* grad_bias = static_cast<float*>(rlk::sdk::data_of(rlk::sdk::argument(call, "grad_bias")));
  std::vector<float> activation(static_cast<std::size_t>(t.B * t.K));
  for (std::int64_t i = 0; i < t.B * t.K; ++i) activation[i] = silu(t.temb[i]);
  std::vector<double> dx(static_cast<std::size_t>(t.B * t.K), 0.0);
  parallel_for(t.B, [&](std::int64_t b) {
    for (std::int64_t n = 0; n < t.N; ++n) {
      const double g = dy[b * t.N + n];
      for (std::int64_t k = 0; k < t.K; ++k) dx[b * t.K + k] += g * t.weight[n * t.K + k];
    }
  });
  for (std::int64_t i = 0; i < t.B * t.K; ++i) grad_temb[i] = finish(dx[i] * silu_derivative(t.temb[i]), t.B);
  parallel_for(t.N, [&](std::int64_t n) {
    double column = 0;
    for (std::int64_t b = 0; b < t.B; ++b) column += dy[b * t.N + n];
    grad_bias[n] = finish(column, t.B);
    std::vector<double> row(static_cast<std::size_t>(t.K), 0.0);
    for (std::int64_t b = 0; b < t.B; ++b) {
      const double g = dy[b * t.N + n];
      for (std::int64_t k = 0; k < t.K; ++k) row[k] += g * activation[b * t.K + k];
    }
    for (std::int64_t k = 0; k < t.K; ++k) grad_weight[n * t.K + k] = finish(row[k], t.B);
  });
}

int32_t run(void*, const rlk_call* call, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] {
#if defined(BROKEN_WRITES_NOTHING)
    (void)call;
#else
    if (call->direction == RLK_DIRECTION_FORWARD) forward(*call);
    else backward(*call);
#endif
  });
}

int32_t workspace_bytes(void*, const rlk_call*, uint64_t* bytes, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] { *bytes = 0; });
}

void destroy(void*) {}

const rlk_op_vtable kVtable = {sizeof(rlk_op_vtable), run, workspace_bytes, destroy};

int g_instance = 0;

int32_t create(const rlk_op_create_args*, void** self, const rlk_op_vtable** vtable, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] {
    *self = &g_instance;
    *vtable = &kVtable;
  });
}

const rlk_op_entry kOps[] = {{"qwenimage_adaln_mod_projection", TEST_PLUGIN_SPEC_SHA256, create}};

const rlk_plugin kPlugin = {RLK_PLUGIN_ABI_MAJOR, RLK_PLUGIN_ABI_MINOR, sizeof(rlk_plugin), "cpu", "conformance test plugin",
                            1, kOps, nullptr};

}  // namespace

RLK_EXPORT_PLUGIN(kPlugin)
