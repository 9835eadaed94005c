// A host application using rl-kernel: get the Qwen-Image AdaLN modulation projection for a
// device and run it forward on DLPack tensors. Built with the library (examples/CMakeLists.txt).
//
//   host_app [device]      device defaults to "cpu"; "cuda:0" needs device memory (see docs)
#include <cstdio>
#include <random>
#include <vector>

#include "rlk/registry.hpp"

namespace {

// A float32 host tensor viewed as a DLTensor (no copy).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;

  DLTensor view() {
    DLTensor t{};
    t.data = values.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape.data();
    return t;
  }
};

HostTensor random_tensor(std::vector<int64_t> shape, double stddev, std::mt19937_64& rng) {
  std::size_t count = 1;
  for (auto extent : shape) count *= static_cast<std::size_t>(extent);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(stddev));
  HostTensor tensor{std::move(shape), std::vector<float>(count)};
  for (auto& v : tensor.values) v = normal(rng);
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  const char* device = argc > 1 ? argv[1] : "cpu";
  auto op = rlk::get_op("qwenimage_adaln_mod_projection", device);
  if (!op) {
    std::fprintf(stderr, "host_app: %s\n", op.error().to_string().c_str());
    return 1;
  }
  constexpr int64_t B = 2;
  std::mt19937_64 rng(0);
  HostTensor temb = random_tensor({B, 3072}, 2.0, rng);
  HostTensor weight = random_tensor({18432, 3072}, 0.02, rng);
  HostTensor bias = random_tensor({18432}, 0.02, rng);
  HostTensor out{{B, 18432}, std::vector<float>(B * 18432)};

  auto done = op->forward({{"temb", temb.view()}, {"weight", weight.view()}, {"bias", bias.view()}, {"out", out.view()}});
  if (!done) {
    std::fprintf(stderr, "host_app: %s\n", done.error().to_string().c_str());
    return 1;
  }
  // out holds (shift, scale, gate) x 2, each 3072 wide, per row.
  std::printf("%s on %s: out[0][0] = %.6f, out[1][18431] = %.6f\n", op->key().c_str(), device, out.values[0],
              out.values[2 * 18432 - 1]);
  return 0;
}
