// The host side of one operator call: its inputs (shared ones held by pointer, so a weight
// drawn once is neither copied nor uploaded again) and the outputs read back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "rlk/safetensors.hpp"

namespace rlk::conform {

struct CallInputs {
  std::int64_t batch = 0;
  std::map<std::string, std::shared_ptr<const HostTensor>, std::less<>> tensors;
};

using HostOutputs = std::map<std::string, HostTensor, std::less<>>;

// Bytes of one row of a tensor whose leading dimension is the batch.
std::size_t row_bytes(const HostTensor& tensor);
std::span<const std::byte> row_of(const HostTensor& tensor, std::int64_t row);
// A tensor made of `rows` of `source` in that order; a row index of -1 is a row of zero bytes.
HostTensor gather_rows(const HostTensor& source, std::span<const std::int64_t> rows);

// Reads every element of a float32, bfloat16 or float64 tensor as a double.
double element_as_double(const HostTensor& tensor, std::int64_t index);
void set_element_from_double(HostTensor& tensor, std::int64_t index, double value);

}  // namespace rlk::conform
