#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "rlk/bfloat16.hpp"
#include "rlk/device.hpp"
#include "rlk/error.hpp"

namespace rlk {
namespace {

TEST(Error, ChainListsCausesOutermostFirstAndKeepsTheRootCode) {
  const Error root(ErrorCode::library_not_found, "librlk_backend_cuda.so not found");
  const Error wrapped = root.with_context("slot cuda").with_context("get_op(k, cuda:0)");
  EXPECT_EQ(wrapped.code(), ErrorCode::library_not_found);
  EXPECT_EQ(wrapped.chain(), (std::vector<std::string>{"get_op(k, cuda:0)", "slot cuda", "librlk_backend_cuda.so not found"}));
  EXPECT_EQ(wrapped.message(), "get_op(k, cuda:0)");
  EXPECT_EQ(wrapped.to_string(), "get_op(k, cuda:0): slot cuda: librlk_backend_cuda.so not found");
  EXPECT_EQ(root.chain().size(), 1u) << "with_context must not change the error it wraps";
}

TEST(Device, ParsesEveryPlatformAndIndex) {
  EXPECT_EQ(*parse_device("cpu"), (Device{Platform::cpu, 0}));
  EXPECT_EQ(*parse_device("cuda"), (Device{Platform::cuda, 0}));
  EXPECT_EQ(*parse_device("cuda:3"), (Device{Platform::cuda, 3}));
  EXPECT_EQ(*parse_device("rocm:1"), (Device{Platform::rocm, 1}));
  EXPECT_EQ(*parse_device("npu:0"), (Device{Platform::npu, 0}));
  EXPECT_EQ(*parse_device("musa:2"), (Device{Platform::musa, 2}));
  EXPECT_EQ(to_string(Device{Platform::cuda, 3}), "cuda:3");
}

TEST(Device, RefusesMalformedDevicesNamingThem) {
  for (const char* text : {"cuda:", "cuda:-1", "cuda:1x", "cpu:1", "gpu:0"}) {
    auto device = parse_device(text);
    ASSERT_FALSE(device) << text;
    EXPECT_EQ(device.error().code(), ErrorCode::invalid_argument);
    EXPECT_NE(device.error().to_string().find(text), std::string::npos) << device.error().to_string();
  }
}

TEST(Bfloat16, RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // tie, even stays
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f808001u)).bits, 0x3f81);  // above the tie
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::bit_cast<float>(0x7f800001u))))) << "a signalling NaN must not become Inf";
  EXPECT_EQ(to_float(to_bfloat16(std::numeric_limits<float>::infinity())), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace rlk
