// Each deliberately broken test plugin (plugins/test_plugin.cpp) gets its exact status and message.
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>

#include "rlk/plugin_abi.h"
#include "test_env.hpp"

namespace rlk {
namespace {

const std::filesystem::path kPluginDir = RLK_TEST_PLUGIN_DIR;

std::shared_ptr<Registry> test_registry() { return test::open_registry({RLK_TEST_SPECS}, {kPluginDir}); }

SlotStatus cuda_row(Registry& registry, std::string_view key) { return registry.status(key)[1]; }

TEST(BrokenPlugins, MissingLibraryIsLibraryNotFoundWithTheSearchedPath) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_missing");
  EXPECT_EQ(row.state, SlotState::library_not_found);
  const auto expected = kPluginDir / "librlk_test_plugin_missing.so";
  EXPECT_EQ(row.examined, std::vector<std::filesystem::path>{expected});
  EXPECT_TRUE(test::contains(row.reason, "plugin file librlk_test_plugin_missing.so not found (searched " + expected.string() + ")"))
      << row.reason;
  auto op = registry->get_op("test_missing", "cuda:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::library_not_found);
}

TEST(BrokenPlugins, WrongAbiVersionIsRefusedWithBothVersions) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_wrong_abi");
  EXPECT_EQ(row.state, SlotState::abi_mismatch);
  EXPECT_TRUE(test::contains(row.reason, "plugin ABI version 99.0, host ABI version 1.0 (major versions must match)")) << row.reason;
  auto op = registry->get_op("test_wrong_abi", "cuda:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::abi_mismatch);
}

TEST(BrokenPlugins, StructSmallerThanItsAbiVersionIsRefused) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_short_struct");
  EXPECT_EQ(row.state, SlotState::abi_mismatch);
  EXPECT_TRUE(test::contains(row.reason, "rlk_plugin struct_size " + std::to_string(offsetof(rlk_plugin, probe)) +
                                             " is smaller than ABI 1.0's " + std::to_string(sizeof(rlk_plugin))))
      << row.reason;
}

TEST(BrokenPlugins, MissingEntrySymbolIsALoadError) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_no_entry");
  EXPECT_EQ(row.state, SlotState::load_error);
  EXPECT_TRUE(test::contains(row.reason, "entry symbol 'rlk_plugin_entry' missing")) << row.reason;
}

TEST(BrokenPlugins, FailingProbeRefusesTheDeviceWithTheProbeMessage) {
  auto registry = test_registry();
  EXPECT_EQ(cuda_row(*registry, "test_probe_fails").state, SlotState::available);  // device-independent
  const auto row = registry->status("test_probe_fails", Device{Platform::cuda, 0});
  EXPECT_EQ(row.state, SlotState::probe_failed);
  auto op = registry->get_op("test_probe_fails", "cuda:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::probe_failed);
  EXPECT_TRUE(test::contains(op.error().to_string(), "deliberate probe failure on device 0")) << op.error().to_string();
}

TEST(BrokenPlugins, ThrowingCreateBecomesAnErrorNotACrash) {
  auto registry = test_registry();
  auto op = registry->get_op("test_create_throws", "cuda:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::internal);
  EXPECT_TRUE(test::contains(op.error().to_string(), "create failed: unexpected exception: deliberate failure inside create"))
      << op.error().to_string();
}

TEST(BrokenPlugins, DuplicateKeyInOnePluginIsAnError) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_duplicate");
  EXPECT_EQ(row.state, SlotState::duplicate);
  EXPECT_TRUE(test::contains(row.reason, "lists key 'test_duplicate' 2 times")) << row.reason;
  EXPECT_FALSE(registry->get_op("test_duplicate", "cuda:0"));
}

TEST(BrokenPlugins, SpecHashMismatchDisablesOnlyThatOperator) {
  auto registry = test_registry();
  const auto beta = cuda_row(*registry, "test_beta");
  EXPECT_EQ(beta.state, SlotState::spec_mismatch);
  EXPECT_TRUE(test::contains(beta.reason, "spec mismatch")) << beta.reason;
  auto op = registry->get_op("test_beta", "cuda:0");
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code(), ErrorCode::spec_mismatch);
  EXPECT_EQ(cuda_row(*registry, "test_alpha").state, SlotState::available);
  EXPECT_TRUE(registry->get_op("test_alpha", "cuda:0")) << "the other operator of the same plugin stays usable";
}

TEST(BrokenPlugins, KeyNotServedByThePluginIsNotImplemented) {
  auto registry = test_registry();
  const auto row = cuda_row(*registry, "test_unserved");
  EXPECT_EQ(row.state, SlotState::not_implemented);
  EXPECT_TRUE(test::contains(row.reason, "does not serve key 'test_unserved'")) << row.reason;
}

TEST(PluginLifetime, OperatorKeepsItsLibraryLoadedAfterTheRegistryIsGone) {
  const auto library = (kPluginDir / "librlk_test_plugin_good.so").string();
  std::optional<Op> op;
  {
    auto registry = test_registry();
    auto created = registry->get_op("test_alpha", "cuda:0");
    ASSERT_TRUE(created) << created.error().to_string();
    op = *created;
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << "the library was unloaded while an operator from it is alive";
  dlclose(handle);
  std::vector<int64_t> shape{1, 4};
  alignas(16) float x[4] = {1, 2, 3, 4};
  alignas(16) float y[4] = {};
  auto run = op->forward({{"x", test::host_tensor(x, shape, {kDLCUDA, 0})}, {"y", test::host_tensor(y, shape, {kDLCUDA, 0})}});
  ASSERT_TRUE(run) << run.error().to_string();
  EXPECT_EQ(y[3], 8.0f);
  op.reset();
  handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(handle, nullptr) << "the library stayed loaded after its last operator and registry were destroyed";
  if (handle != nullptr) dlclose(handle);
}

TEST(PluginSearch, WorkingDirectoryIsNeverSearched) {
  const auto empty = std::filesystem::temp_directory_path() / "rlk_empty_plugin_dir_cwd";
  std::filesystem::create_directories(empty);
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(kPluginDir);  // the plugin file sits right here
  auto registry = test::open_registry({RLK_TEST_SPECS}, {empty});
  const auto row = cuda_row(*registry, "test_alpha");
  std::filesystem::current_path(previous);
  EXPECT_EQ(row.state, SlotState::library_not_found) << row.reason;
  for (const auto& examined : row.examined) EXPECT_EQ(examined.parent_path(), empty);
}

TEST(PluginSearch, EnvironmentVariableOverridesThePluginPath) {
  setenv("RLK_PLUGIN_PATH", kPluginDir.c_str(), 1);
  setenv("RLK_SPEC_PATH", RLK_TEST_SPECS, 1);
  auto registry = Registry::open();
  unsetenv("RLK_PLUGIN_PATH");
  unsetenv("RLK_SPEC_PATH");
  ASSERT_TRUE(registry) << registry.error().to_string();
  EXPECT_EQ((*registry)->options().plugin_path, std::vector<std::filesystem::path>{kPluginDir});
  EXPECT_TRUE((*registry)->get_op("test_alpha", "cuda:0"));
}

}  // namespace
}  // namespace rlk
