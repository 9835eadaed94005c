#include <fstream>

#include "test_env.hpp"

namespace rlk {
namespace {

constexpr const char* kKey = "qwenimage_adaln_mod_projection";

std::shared_ptr<Registry> repository_registry() {
  return test::open_registry({RLK_REPO_SPECS}, {RLK_LIBRARY_DIR});
}

TEST(RegistryResolution, DefaultOptionsFindTheRepositorySpecsFromTheBuildTree) {
  auto registry = Registry::open();
  ASSERT_TRUE(registry) << registry.error().to_string();
  EXPECT_NE((*registry)->find_spec(kKey), nullptr);
}

TEST(RegistryResolution, CpuRoutesToTheReference) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "cpu");
  ASSERT_TRUE(op) << op.error().to_string();
  EXPECT_EQ(op->implementation(), "reference");
  EXPECT_EQ(op->device(), (Device{Platform::cpu, 0}));
}

TEST(RegistryResolution, NpuFailsClosedWithTheSpecReason) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "npu:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::not_implemented);
  const auto message = op.error().to_string();
  EXPECT_TRUE(test::contains(message, "get_op(qwenimage_adaln_mod_projection, npu:0)")) << message;
  EXPECT_TRUE(test::contains(message, "adaln_mod_projection.yaml, slot npu")) << message;
  EXPECT_TRUE(test::contains(message, "fail-closed: no Ascend NPU implementation")) << message;
}

TEST(RegistryResolution, MusaFailsClosedWithTheSpecReason) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "musa:1");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::not_implemented);
  EXPECT_TRUE(test::contains(op.error().to_string(), "fail-closed: no Moore Threads MUSA implementation")) << op.error().to_string();
}

TEST(RegistryResolution, RocmFailsClosedAndReportsWhatItsPluginSays) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "rocm:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::not_implemented);
  const auto message = op.error().to_string();
  EXPECT_TRUE(test::contains(message, "fail-closed: no HIP kernels for this operator yet")) << message;
  EXPECT_TRUE(test::contains(message, "librlk_backend_rocm.so loaded (ABI 1.0, platform rocm)")) << message;
  EXPECT_TRUE(test::contains(message, "built against HIP ")) << message;
}

TEST(RegistryResolution, CudaRequestNeverGetsTheCpuPath) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "cuda:0");
  if (op) {
    EXPECT_TRUE(test::contains(op->implementation(), "librlk_backend_cuda.so")) << op->implementation();
    return;
  }
  const auto message = op.error().to_string();
  EXPECT_TRUE(test::contains(message, "slot cuda")) << message;
  EXPECT_FALSE(test::contains(message, "reference")) << message;
  EXPECT_TRUE(op.error().code() == ErrorCode::no_device || op.error().code() == ErrorCode::probe_failed ||
              op.error().code() == ErrorCode::library_not_found)
      << message;
}

TEST(RegistryResolution, CudaWithoutGpuNamesTheMissingDevice) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "cuda:0");
  if (op) GTEST_SKIP() << "a CUDA device is present; this test checks the refusal on machines without one";
  const auto message = op.error().to_string();
  if (op.error().code() == ErrorCode::library_not_found) GTEST_SKIP() << "the CUDA plugin is not built: " << message;
  EXPECT_EQ(op.error().code(), ErrorCode::no_device) << message;
  EXPECT_TRUE(test::contains(message, "librlk_backend_cuda.so")) << message;
  EXPECT_TRUE(test::contains(message, "no usable CUDA device")) << message;
}

TEST(RegistryResolution, AbsentCudaDeviceIndexIsNamed) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "cuda:63");
  ASSERT_FALSE(op);
  const auto message = op.error().to_string();
  if (op.error().code() == ErrorCode::library_not_found) GTEST_SKIP() << "the CUDA plugin is not built: " << message;
  EXPECT_EQ(op.error().code(), ErrorCode::no_device) << message;
  EXPECT_TRUE(test::contains(message, "cuda:63")) << message;
}

TEST(RegistryResolution, UnknownKeyListsTheNearestKeys) {
  auto registry = repository_registry();
  auto op = registry->get_op("qwenimage_adaln_mod_projectoin", "cpu");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::unknown_key);
  EXPECT_TRUE(test::contains(op.error().to_string(), "nearest known keys: qwenimage_adaln_mod_projection"))
      << op.error().to_string();
}

TEST(RegistryResolution, SpecOfAnUnknownKeyNamesTheNearestKeys) {
  auto registry = repository_registry();
  auto spec = registry->spec("qwenimage_adaln");
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().code(), ErrorCode::unknown_key);
  EXPECT_EQ(spec.error().to_string(), "unknown key 'qwenimage_adaln'; nearest known keys: qwenimage_adaln_mod_projection");
  ASSERT_TRUE(registry->spec(kKey));
  EXPECT_EQ((*registry->spec(kKey))->key, kKey);
}

TEST(RegistryResolution, UnknownPlatformIsRefused) {
  auto registry = repository_registry();
  auto op = registry->get_op(kKey, "tpu:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::invalid_argument);
  EXPECT_TRUE(test::contains(op.error().to_string(), "unknown platform 'tpu'")) << op.error().to_string();
}

TEST(RegistryResolution, StatusTableHasOneRowPerPlatform) {
  auto registry = repository_registry();
  const auto table = registry->status(kKey);
  ASSERT_EQ(table.size(), 5u);
  EXPECT_EQ(table[0].platform, Platform::cpu);
  EXPECT_EQ(table[0].state, SlotState::available);
  EXPECT_EQ(table[3].platform, Platform::npu);
  EXPECT_EQ(table[3].state, SlotState::not_implemented);
  EXPECT_FALSE(table[2].examined.empty());  // the rocm plugin was searched for
}

TEST(RegistryResolution, MissingPluginDirectoryGivesLibraryNotFoundWithTheSearchedFiles) {
  const auto empty = std::filesystem::temp_directory_path() / "rlk_empty_plugin_dir";
  std::filesystem::create_directories(empty);
  auto registry = test::open_registry({RLK_REPO_SPECS}, {empty});
  const auto row = registry->status(kKey)[1];
  EXPECT_EQ(row.state, SlotState::library_not_found);
  ASSERT_EQ(row.examined.size(), 1u);
  EXPECT_EQ(row.examined[0], empty / "librlk_backend_cuda.so");
  EXPECT_TRUE(test::contains(row.reason, "librlk_backend_cuda.so not found")) << row.reason;
}

TEST(RegistryResolution, DuplicateKeyAcrossSpecFilesIsAnError) {
  const auto dir = std::filesystem::temp_directory_path() / "rlk_duplicate_specs";
  std::filesystem::create_directories(dir);
  const auto spec = std::filesystem::path(RLK_REPO_SPECS) / "qwenimage" / "adaln_mod_projection.yaml";
  std::filesystem::copy_file(spec, dir / "a.yaml", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(spec, dir / "b.yaml", std::filesystem::copy_options::overwrite_existing);
  auto registry = Registry::open(RegistryOptions{{dir}, {RLK_LIBRARY_DIR}});
  ASSERT_FALSE(registry);
  EXPECT_EQ(registry.error().code(), ErrorCode::duplicate);
  EXPECT_TRUE(test::contains(registry.error().to_string(), "is defined twice")) << registry.error().to_string();
}

TEST(RegistryResolution, MalformedSpecOnThePathRefusesTheRegistryWithItsPosition) {
  const auto dir = std::filesystem::temp_directory_path() / "rlk_bad_specs";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "key: [unclosed\n";
  auto registry = Registry::open(RegistryOptions{{dir}, {RLK_LIBRARY_DIR}});
  ASSERT_FALSE(registry);
  EXPECT_EQ(registry.error().code(), ErrorCode::spec_invalid);
  EXPECT_TRUE(test::contains(registry.error().to_string(), "bad.yaml:2:1")) << registry.error().to_string();
}

}  // namespace
}  // namespace rlk
