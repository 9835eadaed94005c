// bfloat16 storage: the top 16 bits of an IEEE binary32, rounded to nearest even.
// Hand-written because no Debian-packaged C++ library offers a host bfloat16 type;
// it is only a storage conversion, the arithmetic is done in float.
#pragma once

#include <bit>
#include <cstdint>

namespace rlk {

struct bfloat16 {
  std::uint16_t bits = 0;
};

inline bfloat16 to_bfloat16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and payload's top bits, force quiet
    return bfloat16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  }
  const std::uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return bfloat16{static_cast<std::uint16_t>((u + rounding_bias) >> 16)};
}

inline float to_float(bfloat16 value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

// Rounds a float to the nearest bfloat16 value and returns it as a float.
inline float round_to_bfloat16(float value) { return to_float(to_bfloat16(value)); }

}  // namespace rlk
