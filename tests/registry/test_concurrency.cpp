#include <thread>

#include "test_env.hpp"

namespace rlk {
namespace {

TEST(Concurrency, ManyThreadsGetOpsAndThePluginIsLoadedOnce) {
  auto registry = test::open_registry({RLK_TEST_SPECS}, {RLK_TEST_PLUGIN_DIR});
  constexpr int kThreads = 32;
  std::vector<std::optional<Result<Op>>> results(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] { results[i] = registry->get_op(i % 2 ? "test_alpha" : "test_beta", "cuda:0"); });
    }
  }
  for (int i = 0; i < kThreads; ++i) {
    if (i % 2) {
      ASSERT_TRUE(*results[i]) << results[i]->error().to_string();
    } else {
      ASSERT_FALSE(*results[i]);
      EXPECT_EQ(results[i]->error().code(), ErrorCode::spec_mismatch);
    }
  }
  // The test plugin writes how often its entry point was called into y[0].
  std::vector<int64_t> shape{1, 4};
  alignas(16) float x[4] = {1, 2, 3, 4};
  alignas(16) float y[4] = {};
  auto run = results[1]->value().forward(
      {{"x", test::host_tensor(x, shape, {kDLCUDA, 0})}, {"y", test::host_tensor(y, shape, {kDLCUDA, 0})}});
  ASSERT_TRUE(run) << run.error().to_string();
  EXPECT_EQ(y[0], 1.0f);
}

TEST(Concurrency, ManyThreadsGetTheCpuReference) {
  auto registry = test::open_registry({RLK_REPO_SPECS}, {RLK_LIBRARY_DIR});
  std::atomic<int> successes = 0;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([&] {
        if (registry->get_op("qwenimage_adaln_mod_projection", "cpu")) ++successes;
      });
    }
  }
  EXPECT_EQ(successes.load(), 16);
}

}  // namespace
}  // namespace rlk
