// A configurable plugin for the registry tests. Each build of this file (CMake defines
// TEST_PLUGIN_*) is one deliberately broken or well-behaved plugin; the tests check the
// exact status and message the registry gives each.
#include <stdexcept>
#include <string>

#include "rlk/plugin_sdk.hpp"

#ifndef TEST_PLUGIN_ABI_MAJOR
#define TEST_PLUGIN_ABI_MAJOR RLK_PLUGIN_ABI_MAJOR
#endif
#ifndef TEST_PLUGIN_STRUCT_SIZE
#define TEST_PLUGIN_STRUCT_SIZE sizeof(rlk_plugin)
#endif

namespace {

int g_entry_calls = 0;

struct DoublingOp {
  int device = 0;
};

// out = 2 * x on host memory, plus out[0] of row 0 set to the number of entry calls so
// the tests can see that the library was loaded (and its entry called) exactly once.
int32_t run(void*, const rlk_call* call, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] {
    const DLTensor& x = rlk::sdk::argument(*call, "x");
    const DLTensor& y = rlk::sdk::argument(*call, "y");
    const auto* in = static_cast<const float*>(rlk::sdk::data_of(x));
    auto* out = static_cast<float*>(rlk::sdk::data_of(y));
    const int64_t n = x.shape[0] * x.shape[1];
    for (int64_t i = 0; i < n; ++i) out[i] = 2.0f * in[i];
    out[0] = static_cast<float>(g_entry_calls);
  });
}

int32_t workspace_bytes(void*, const rlk_call*, uint64_t* bytes, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] { *bytes = 0; });
}

void destroy(void* self) { delete static_cast<DoublingOp*>(self); }

const rlk_op_vtable kVtable = {sizeof(rlk_op_vtable), run, workspace_bytes, destroy};

int32_t create(const rlk_op_create_args* args, void** self, const rlk_op_vtable** vtable, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] {
#ifdef TEST_PLUGIN_CREATE_THROWS
    throw std::runtime_error("deliberate failure inside create");
#endif
    *self = new DoublingOp{args->device_index};
    *vtable = &kVtable;
  });
}

int32_t probe(int32_t device, char* message, size_t capacity) {
  return rlk::sdk::guarded(message, capacity, [&] {
#ifdef TEST_PLUGIN_PROBE_FAILS
    throw rlk::sdk::PluginError{RLK_STATUS_PROBE_FAILED, "deliberate probe failure on device " + std::to_string(device)};
#endif
  });
}

const rlk_op_entry kOps[] = {
    {TEST_PLUGIN_KEY, TEST_PLUGIN_SPEC_SHA256, create},
#ifdef TEST_PLUGIN_SECOND_KEY
    {TEST_PLUGIN_SECOND_KEY, TEST_PLUGIN_SECOND_SPEC_SHA256, create},
#endif
};

const rlk_plugin kPlugin = {
    TEST_PLUGIN_ABI_MAJOR, 0, TEST_PLUGIN_STRUCT_SIZE, "cuda", "registry test plugin",
    sizeof(kOps) / sizeof(kOps[0]), kOps, probe,
};

}  // namespace

#ifndef TEST_PLUGIN_NO_ENTRY
extern "C" __attribute__((visibility("default"))) const rlk_plugin* rlk_plugin_entry(void) {
  ++g_entry_calls;
  return &kPlugin;
}
#endif
