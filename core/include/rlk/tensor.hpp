// Tensors cross every boundary as DLPack DLTensors; these are the few helpers the
// library needs on top of dlpack.h (dtype names, element counts, byte extents).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <dlpack/dlpack.h>

#include "rlk/device.hpp"

namespace rlk {

enum class DType { float32, bfloat16, float64 };

std::string_view to_string(DType dtype);
// Accepts the spec names ("float32", "bfloat16", "float64") and the short CLI names ("fp32", "bf16", "fp64").
Result<DType> parse_dtype(std::string_view text);
DLDataType to_dlpack(DType dtype);
std::optional<DType> from_dlpack(DLDataType dtype);
std::size_t element_size(DType dtype);

std::int64_t element_count(const DLTensor& tensor);
// True when strides are NULL or describe a compact row-major layout.
bool is_row_major_contiguous(const DLTensor& tensor);
// First byte of the tensor's data (data + byte_offset).
const std::byte* first_byte(const DLTensor& tensor);
// Byte length of the elements the tensor addresses (for contiguous tensors).
std::size_t byte_extent(const DLTensor& tensor);

Device device_of(const DLTensor& tensor);  // kDLCPU -> cpu, kDLCUDA -> cuda:N, kDLROCM -> rocm:N

// The named arguments of one call, keyed by the spec's argument names.
using TensorMap = std::map<std::string, DLTensor, std::less<>>;

}  // namespace rlk
