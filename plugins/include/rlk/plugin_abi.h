/*
 * rl-kernel plugin ABI: the only thing that crosses a backend library's boundary.
 *
 * Plain C on purpose: POD structs, const char*, function pointers, DLPack tensors and
 * integer status codes with a caller-owned message buffer. No C++ type and no exception
 * crosses it (the plugin SDK, plugin_sdk.hpp, turns exceptions into status codes).
 *
 * Versioning: a plugin's rlk_plugin.abi_major must equal RLK_PLUGIN_ABI_MAJOR exactly.
 * Fields added later are gated by abi_minor and by each struct's struct_size, which is
 * always the first or third field and is checked by the host before it reads a later field.
 *
 * The full description lives in docs/plugin-abi.md.
 */
#ifndef RLK_PLUGIN_ABI_H
#define RLK_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLK_PLUGIN_ABI_MAJOR 1u
#define RLK_PLUGIN_ABI_MINOR 0u

/* Name of the single exported entry point: `const rlk_plugin* rlk_plugin_entry(void)`. */
#define RLK_PLUGIN_ENTRY_SYMBOL "rlk_plugin_entry"

/* Status codes returned by every plugin function. The message buffer gets a one-line reason. */
typedef enum rlk_status_code {
  RLK_STATUS_OK = 0,
  RLK_STATUS_INVALID_ARGUMENT = 1,   /* a tensor or option is unacceptable; message names it */
  RLK_STATUS_UNSUPPORTED = 2,        /* this build cannot do it (dtype, architecture, platform) */
  RLK_STATUS_NO_DEVICE = 3,          /* the requested device does not exist or cannot be used */
  RLK_STATUS_PROBE_FAILED = 4,       /* a self-check failed (e.g. fast-math build detected) */
  RLK_STATUS_RUNTIME_ERROR = 5,      /* the platform runtime reported an error */
  RLK_STATUS_WORKSPACE_TOO_SMALL = 6,/* caller's workspace is smaller than workspace_bytes() */
  RLK_STATUS_INTERNAL = 7            /* an unexpected exception or bug inside the plugin */
} rlk_status_code;

typedef enum rlk_direction {
  RLK_DIRECTION_FORWARD = 0,
  RLK_DIRECTION_BACKWARD = 1
} rlk_direction;

/* One named argument of a call. Names are the spec's argument names. */
typedef struct rlk_tensor_arg {
  const char* name;
  const DLTensor* tensor;
} rlk_tensor_arg;

/* One call of an operator. The host validates names, dtypes, shapes, devices, strides,
 * alignment and aliasing against the spec before the plugin sees the call. */
typedef struct rlk_call {
  uint32_t struct_size;          /* sizeof(rlk_call) as the host knows it */
  int32_t direction;             /* rlk_direction */
  const rlk_tensor_arg* args;
  uint32_t num_args;
  void* stream;                  /* platform stream (cudaStream_t); NULL = the legacy default stream */
  void* workspace;               /* device memory owned by the caller, or NULL */
  uint64_t workspace_bytes;
} rlk_call;

/* An operator instance created by a plugin. `self` is opaque to the host. */
typedef struct rlk_op_vtable {
  uint32_t struct_size;
  /* Runs the call. Must not allocate device memory nor synchronize the host when a large
   * enough workspace is given. On any non-OK status no output byte has been written. */
  int32_t (*run)(void* self, const rlk_call* call, char* message, size_t message_capacity);
  /* Device workspace the call needs (0 if none). */
  int32_t (*workspace_bytes)(void* self, const rlk_call* call, uint64_t* bytes, char* message,
                             size_t message_capacity);
  void (*destroy)(void* self);
} rlk_op_vtable;

typedef struct rlk_op_create_args {
  uint32_t struct_size;
  int32_t device_index;          /* N of cuda:N (0 for platforms without indices) */
} rlk_op_create_args;

/* One operator a plugin serves. */
typedef struct rlk_op_entry {
  const char* key;               /* the spec's key, e.g. "qwenimage_adaln_mod_projection" */
  const char* spec_sha256;       /* lowercase hex SHA-256 of the spec file it was built against */
  int32_t (*create)(const rlk_op_create_args* args, void** self, const rlk_op_vtable** vtable,
                    char* message, size_t message_capacity);
} rlk_op_entry;

typedef struct rlk_plugin {
  uint32_t abi_major;            /* checked before anything else */
  uint32_t abi_minor;
  uint32_t struct_size;          /* sizeof(rlk_plugin) as the plugin knows it */
  const char* platform;          /* "cuda", "rocm", ... */
  const char* build_info;        /* compiler, flags, toolkit: shown by `rlk explain` */
  uint32_t num_ops;
  const rlk_op_entry* ops;
  /* Optional (may be NULL): checks that device `device_index` can run this plugin's
   * operators (present, supported architecture, strict math). Called once per device. */
  int32_t (*probe)(int32_t device_index, char* message, size_t message_capacity);
} rlk_plugin;

typedef const rlk_plugin* (*rlk_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* RLK_PLUGIN_ABI_H */
