#include "compare.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "call.hpp"
#include "rlk/bfloat16.hpp"

namespace rlk::conform {
namespace {

double rounded_to(DType dtype, double value) {
  switch (dtype) {
    case DType::float32: return static_cast<float>(value);
    case DType::bfloat16: return round_to_bfloat16(static_cast<float>(value));
    case DType::float64: return value;
  }
  return value;
}

// Maps a value's bits to an integer whose order is the order of the values, so the
// difference of two such integers is their distance in ulps.
std::int64_t ordered_bits(DType dtype, double value) {
  std::int64_t bits = 0;
  std::int64_t sign_flip = 0;
  switch (dtype) {
    case DType::float32:
      bits = std::bit_cast<std::int32_t>(static_cast<float>(value));
      sign_flip = std::numeric_limits<std::int32_t>::min();
      break;
    case DType::bfloat16:
      bits = static_cast<std::int16_t>(to_bfloat16(static_cast<float>(value)).bits);
      sign_flip = std::numeric_limits<std::int16_t>::min();
      break;
    case DType::float64:
      bits = std::bit_cast<std::int64_t>(value);
      sign_flip = std::numeric_limits<std::int64_t>::min();
      break;
  }
  return bits < 0 ? sign_flip - bits : bits;
}

}  // namespace

nlohmann::json AccuracyStats::to_json() const {
  return {{"elements", elements},         {"violations", violations},   {"non_finite", non_finite},
          {"reference_zeros", reference_zeros}, {"max_abs", max_abs},   {"max_rel", max_rel},
          {"relative_elements", relative_elements}, {"max_ulp", max_ulp}, {"worst_ulp", worst_ulp},
          {"worst_index", worst_index},   {"worst_value", worst_value},
          {"worst_reference", worst_reference}, {"worst_tolerance_ratio", worst_ratio}};
}

AccuracyStats compare_values(const HostTensor& got, const HostTensor& reference, Tolerance tolerance) {
  AccuracyStats s;
  s.elements = got.element_count();
  s.worst_ratio = -1;
  for (std::int64_t i = 0; i < s.elements; ++i) {
    const double x = element_as_double(got, i);
    const double ref = rounded_to(got.dtype, element_as_double(reference, i));
    if (ref == 0) ++s.reference_zeros;
    const double abs_error = std::fabs(x - ref);
    const double bound = tolerance.atol + tolerance.rtol * std::fabs(ref);
    double ratio = 0;
    double ulp = 0;
    if (!std::isfinite(x) && std::isfinite(ref)) {
      ++s.non_finite;
      ratio = std::numeric_limits<double>::infinity();
    } else if (std::isfinite(ref)) {
      s.max_abs = std::max(s.max_abs, abs_error);
      ulp = std::fabs(static_cast<double>(ordered_bits(got.dtype, x) - ordered_bits(got.dtype, ref)));
      if (ref != 0 && tolerance.rtol * std::fabs(ref) >= tolerance.atol) {
        ++s.relative_elements;
        s.max_rel = std::max(s.max_rel, abs_error / std::fabs(ref));
        s.max_ulp = std::max(s.max_ulp, ulp);
      }
      ratio = bound > 0 ? abs_error / bound : (abs_error > 0 ? std::numeric_limits<double>::infinity() : 0);
    } else if (std::bit_cast<std::uint64_t>(x) != std::bit_cast<std::uint64_t>(ref) && !(std::isnan(x) && std::isnan(ref))) {
      ratio = std::numeric_limits<double>::infinity();
    }
    if (!(ratio <= 1)) ++s.violations;
    if (ratio > s.worst_ratio || (std::isnan(ratio) && s.worst_index < 0)) {
      s.worst_ratio = ratio;
      s.worst_index = i;
      s.worst_value = x;
      s.worst_reference = ref;
      s.worst_ulp = ulp;
    }
  }
  return s;
}

double normalized_error(const HostTensor& got, const HostTensor& reference) {
  double scale = 0;
  double worst = 0;
  const std::int64_t n = got.element_count();
  for (std::int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(element_as_double(reference, i)));
  for (std::int64_t i = 0; i < n; ++i) {
    const double error = std::fabs(element_as_double(got, i) - element_as_double(reference, i));
    if (!(error <= worst)) worst = error;  // NaN propagates
  }
  return scale > 0 ? worst / scale : worst;
}

bool mostly_zeros(const AccuracyStats& stats) { return 2 * stats.reference_zeros > stats.elements; }

std::string hex_of(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  // Elements are little-endian: print the most significant byte first.
  for (auto it = bytes.rbegin(); it != bytes.rend(); ++it) {
    const auto b = static_cast<unsigned>(*it);
    text += kDigits[b >> 4];
    text += kDigits[b & 15];
  }
  return "0x" + text;
}

ByteDifference compare_bytes(std::span<const std::byte> got, std::span<const std::byte> want, DType dtype) {
  ByteDifference d;
  if (got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size()) == 0) return d;
  const std::size_t size = element_size(dtype);
  const std::size_t n = std::min(got.size(), want.size()) / size;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data() + i * size, want.data() + i * size, size) != 0) {
      d.element = static_cast<std::int64_t>(i);
      d.got = hex_of(got.subspan(i * size, size));
      d.want = hex_of(want.subspan(i * size, size));
      return d;
    }
  }
  d.element = static_cast<std::int64_t>(n);
  d.got = std::to_string(got.size()) + " bytes";
  d.want = std::to_string(want.size()) + " bytes";
  return d;
}

std::string sha256_of(std::span<const std::byte> bytes) {
  return sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace rlk::conform
