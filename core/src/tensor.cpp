#include "rlk/tensor.hpp"

namespace rlk {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::bfloat16: return "bfloat16";
    case DType::float64: return "float64";
  }
  return "?";
}

Result<DType> parse_dtype(std::string_view text) {
  if (text == "float32" || text == "fp32") return DType::float32;
  if (text == "bfloat16" || text == "bf16") return DType::bfloat16;
  if (text == "float64" || text == "fp64") return DType::float64;
  return fail(ErrorCode::invalid_argument,
              "unknown dtype '" + std::string(text) + "' (expected float32/fp32, bfloat16/bf16 or float64/fp64)");
}

DLDataType to_dlpack(DType dtype) {
  switch (dtype) {
    case DType::float32: return DLDataType{kDLFloat, 32, 1};
    case DType::bfloat16: return DLDataType{kDLBfloat, 16, 1};
    case DType::float64: return DLDataType{kDLFloat, 64, 1};
  }
  return DLDataType{kDLFloat, 32, 1};
}

std::optional<DType> from_dlpack(DLDataType dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  if (dtype.code == kDLFloat && dtype.bits == 32) return DType::float32;
  if (dtype.code == kDLFloat && dtype.bits == 64) return DType::float64;
  if (dtype.code == kDLBfloat && dtype.bits == 16) return DType::bfloat16;
  return std::nullopt;
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::bfloat16: return 2;
    case DType::float64: return 8;
  }
  return 0;
}

std::int64_t element_count(const DLTensor& tensor) {
  std::int64_t count = 1;
  for (int i = 0; i < tensor.ndim; ++i) count *= tensor.shape[i];
  return count;
}

bool is_row_major_contiguous(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  std::int64_t expected = 1;
  for (int i = tensor.ndim - 1; i >= 0; --i) {
    // A stride of an extent-1 dimension never addresses memory, so any value is compact.
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

const std::byte* first_byte(const DLTensor& tensor) {
  return static_cast<const std::byte*>(tensor.data) + tensor.byte_offset;
}

std::size_t byte_extent(const DLTensor& tensor) {
  return static_cast<std::size_t>(element_count(tensor)) * ((tensor.dtype.bits * tensor.dtype.lanes + 7) / 8);
}

Device device_of(const DLTensor& tensor) {
  switch (tensor.device.device_type) {
    case kDLCUDA:
    case kDLCUDAManaged: return Device{Platform::cuda, tensor.device.device_id};
    case kDLROCM: return Device{Platform::rocm, tensor.device.device_id};
    case kDLExtDev: return Device{Platform::npu, tensor.device.device_id};
    default: return Device{Platform::cpu, 0};
  }
}

}  // namespace rlk
