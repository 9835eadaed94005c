// How outputs are judged. Accuracy: against a reference rounded to the output dtype, with the
// spec's |x - ref| <= atol + rtol * |ref|. Invariance: raw bytes, so -0 vs +0 and NaN
// payloads count as differences.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "rlk/safetensors.hpp"
#include "rlk/spec.hpp"

namespace rlk::conform {

struct AccuracyStats {
  std::int64_t elements = 0;
  std::int64_t violations = 0;     // elements outside the tolerance (NaN included)
  std::int64_t non_finite = 0;     // NaN or Inf in the output where the reference is finite
  std::int64_t reference_zeros = 0;
  double max_abs = 0;
  // Relative and ULP errors say nothing where the tolerance is atol-dominated (near-zero
  // references, where a sign flip is billions of ulps): both are maxima over the elements
  // with rtol * |ref| >= atol, counted in `relative_elements`.
  std::int64_t relative_elements = 0;
  double max_rel = 0;
  double max_ulp = 0;              // distance in units in the last place of the output dtype
  double worst_ulp = 0;            // at worst_index
  std::int64_t worst_index = -1;   // the element furthest outside (or least inside) its tolerance
  double worst_value = 0;
  double worst_reference = 0;
  double worst_ratio = 0;          // |x - ref| / (atol + rtol * |ref|) at worst_index

  nlohmann::json to_json() const;
};

// `reference` holds float64 values (the oracle) or values in the output's dtype; either is
// rounded to the output's dtype before comparing.
AccuracyStats compare_values(const HostTensor& got, const HostTensor& reference, Tolerance tolerance);

// Max over elements of |x - ref| / max |ref|: the error relative to the output's scale.
double normalized_error(const HostTensor& got, const HostTensor& reference);

// True when more than half of the reference is exactly zero: such data proves little.
bool mostly_zeros(const AccuracyStats& stats);

struct ByteDifference {
  std::int64_t element = -1;  // first differing element, -1 when the bytes are equal
  std::string got;            // hex of that element in each
  std::string want;
  bool equal() const { return element < 0; }
};

ByteDifference compare_bytes(std::span<const std::byte> got, std::span<const std::byte> want, DType dtype);

std::string hex_of(std::span<const std::byte> bytes);
std::string sha256_of(std::span<const std::byte> bytes);

}  // namespace rlk::conform
