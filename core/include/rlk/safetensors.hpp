// safetensors files: an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape and data_offsets (relative to the data section) plus an optional
// string-to-string __metadata__, then the tensors' bytes. Only the dtypes rl-kernel
// executes or checks against are read: BF16, F32, F64. Nothing is converted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <boost/align/aligned_allocator.hpp>

#include "rlk/error.hpp"
#include "rlk/tensor.hpp"

namespace rlk {

// 64-byte aligned, so a HostTensor's view passes the registry's 16-byte alignment check.
using AlignedBytes = std::vector<std::byte, boost::alignment::aligned_allocator<std::byte, 64>>;

struct HostTensor {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  AlignedBytes bytes;

  // Zero-filled tensor of `shape`.
  static HostTensor zeros(DType dtype, std::vector<std::int64_t> shape);
  std::int64_t element_count() const;
  // A compact row-major kDLCPU tensor over `bytes`; valid while this HostTensor is alive
  // and neither `shape` nor `bytes` is resized.
  DLTensor view();
};

using SafetensorsMetadata = std::map<std::string, std::string>;

struct SafetensorsEntry {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> tensors;
  SafetensorsMetadata metadata;
  std::uint64_t data_start = 0;  // file offset of the data section
};

// Reads and checks the header only: every entry's dtype is known, its byte length matches
// its shape, its offsets lie inside the file, and no two entries overlap.
Result<SafetensorsHeader> read_safetensors_header(const std::filesystem::path& path);
Result<std::map<std::string, HostTensor>> read_safetensors(const std::filesystem::path& path);
// Reads one tensor without reading the others (for checkpoints larger than memory).
Result<HostTensor> read_safetensors_tensor(const std::filesystem::path& path, const std::string& name);

// Writes tensors in name order; the header is space-padded so the data section starts at a
// multiple of 8 bytes. `metadata` is written as __metadata__ when not empty.
Result<void> write_safetensors(const std::filesystem::path& path, const std::map<std::string, HostTensor>& tensors,
                               const SafetensorsMetadata& metadata = {});

}  // namespace rlk
