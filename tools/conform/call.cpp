#include "call.hpp"

#include <cstring>

#include "rlk/bfloat16.hpp"

namespace rlk::conform {

std::size_t row_bytes(const HostTensor& tensor) {
  return tensor.shape.empty() || tensor.shape[0] == 0 ? 0 : tensor.bytes.size() / static_cast<std::size_t>(tensor.shape[0]);
}

std::span<const std::byte> row_of(const HostTensor& tensor, std::int64_t row) {
  const std::size_t n = row_bytes(tensor);
  return {tensor.bytes.data() + static_cast<std::size_t>(row) * n, n};
}

HostTensor gather_rows(const HostTensor& source, std::span<const std::int64_t> rows) {
  auto shape = source.shape;
  shape[0] = static_cast<std::int64_t>(rows.size());
  HostTensor result = HostTensor::zeros(source.dtype, std::move(shape));
  const std::size_t n = row_bytes(source);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] >= 0) std::memcpy(result.bytes.data() + i * n, row_of(source, rows[i]).data(), n);
  }
  return result;
}

double element_as_double(const HostTensor& tensor, std::int64_t index) {
  const std::byte* p = tensor.bytes.data() + static_cast<std::size_t>(index) * element_size(tensor.dtype);
  switch (tensor.dtype) {
    case DType::float32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::bfloat16: {
      bfloat16 v;
      std::memcpy(&v, p, sizeof v);
      return to_float(v);
    }
    case DType::float64: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
  }
  return 0;
}

void set_element_from_double(HostTensor& tensor, std::int64_t index, double value) {
  std::byte* p = tensor.bytes.data() + static_cast<std::size_t>(index) * element_size(tensor.dtype);
  switch (tensor.dtype) {
    case DType::float32: {
      const auto v = static_cast<float>(value);
      std::memcpy(p, &v, sizeof v);
      break;
    }
    case DType::bfloat16: {
      const bfloat16 v = to_bfloat16(static_cast<float>(value));
      std::memcpy(p, &v, sizeof v);
      break;
    }
    case DType::float64: std::memcpy(p, &value, sizeof value); break;
  }
}

}  // namespace rlk::conform
