// Properties of the safetensors reader and writer: bytes survive a round trip exactly in
// every dtype, one tensor can be read alone, and malformed files are refused with a reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include "rlk/safetensors.hpp"

namespace {

namespace fs = std::filesystem;
using rlk::DType;
using rlk::HostTensor;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = fs::temp_directory_path() / ("rlk_safetensors_" + std::to_string(::getpid()) + "_" + test->name());
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path file(const std::string& name) const { return directory_ / name; }

  // A file with `header` as its JSON header, declared with `declared_length` bytes.
  fs::path raw_file(const std::string& header, std::size_t data_bytes, std::uint64_t declared_length) const {
    const fs::path path = file("raw.safetensors");
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((declared_length >> (8 * i)) & 0xff));
    out << header << std::string(data_bytes, '\0');
    return path;
  }
  fs::path raw_file(const std::string& header, std::size_t data_bytes) const { return raw_file(header, data_bytes, header.size()); }

  std::string refusal(const fs::path& path) const {
    auto read = rlk::read_safetensors(path);
    return read ? std::string("accepted") : read.error().to_string();
  }

 private:
  fs::path directory_;
};

// Every bit pattern, NaN payloads and subnormals included, since nothing may be converted.
HostTensor random_bits(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed) {
  HostTensor tensor = HostTensor::zeros(dtype, std::move(shape));
  std::mt19937_64 generator(seed);
  for (std::byte& b : tensor.bytes) b = static_cast<std::byte>(generator());
  return tensor;
}

TEST_F(SafetensorsTest, RoundTripKeepsEveryByteAndShapeForEachDtype) {
  std::map<std::string, HostTensor> tensors;
  tensors.emplace("bf16", random_bits(DType::bfloat16, {3, 5}, 1));
  tensors.emplace("f32", random_bits(DType::float32, {7}, 2));
  tensors.emplace("f64", random_bits(DType::float64, {2, 1, 3}, 3));
  tensors.emplace("scalar", random_bits(DType::float32, {}, 4));
  tensors.emplace("empty", random_bits(DType::bfloat16, {0, 4}, 5));
  const rlk::SafetensorsMetadata metadata = {{"key", "op"}, {"note", "round trip"}};
  ASSERT_TRUE(rlk::write_safetensors(file("a.safetensors"), tensors, metadata));

  auto read = rlk::read_safetensors(file("a.safetensors"));
  ASSERT_TRUE(read) << read.error().to_string();
  ASSERT_EQ(read->size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const HostTensor& back = read->at(name);
    EXPECT_EQ(back.dtype, tensor.dtype) << name;
    EXPECT_EQ(back.shape, tensor.shape) << name;
    EXPECT_EQ(back.bytes, tensor.bytes) << name;
  }
  auto header = rlk::read_safetensors_header(file("a.safetensors"));
  ASSERT_TRUE(header);
  EXPECT_EQ(header->metadata, metadata);
  EXPECT_EQ(header->data_start % 8, 0u);
}

TEST_F(SafetensorsTest, OneTensorReadAloneEqualsItsFullRead) {
  std::map<std::string, HostTensor> tensors;
  tensors.emplace("first", random_bits(DType::float64, {4, 4}, 6));
  tensors.emplace("second", random_bits(DType::bfloat16, {9}, 7));
  ASSERT_TRUE(rlk::write_safetensors(file("b.safetensors"), tensors));
  auto second = rlk::read_safetensors_tensor(file("b.safetensors"), "second");
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_EQ(second->shape, tensors.at("second").shape);
  EXPECT_EQ(second->bytes, tensors.at("second").bytes);

  auto absent = rlk::read_safetensors_tensor(file("b.safetensors"), "third");
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().to_string().find("'third'"), std::string::npos) << absent.error().to_string();
}

TEST_F(SafetensorsTest, ViewIsSixteenByteAlignedCpuTensor) {
  HostTensor tensor = HostTensor::zeros(DType::bfloat16, {3});
  const DLTensor view = tensor.view();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(view.data) % 16, 0u);
  EXPECT_EQ(view.device.device_type, kDLCPU);
  EXPECT_EQ(rlk::from_dlpack(view.dtype), DType::bfloat16);
  EXPECT_EQ(rlk::element_count(view), 3);
}

TEST_F(SafetensorsTest, FileShorterThanTheLengthFieldIsRefused) {
  const fs::path path = file("short.safetensors");
  std::ofstream(path, std::ios::binary) << "abc";
  EXPECT_NE(refusal(path).find("fewer than the 8-byte header length"), std::string::npos) << refusal(path);
}

TEST_F(SafetensorsTest, TruncatedHeaderIsRefused) {
  const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const fs::path path = raw_file(header, 0, header.size() + 100);
  EXPECT_NE(refusal(path).find("truncated"), std::string::npos) << refusal(path);
}

TEST_F(SafetensorsTest, HeaderThatIsNotJsonIsRefused) {
  const fs::path path = raw_file(R"({"x": {"dtype": )", 0);
  EXPECT_NE(refusal(path).find("not valid JSON"), std::string::npos) << refusal(path);
}

TEST_F(SafetensorsTest, OffsetsBeyondTheFileAreRefused) {
  const fs::path path = raw_file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  const std::string reason = refusal(path);
  EXPECT_NE(reason.find("'x'"), std::string::npos) << reason;
  EXPECT_NE(reason.find("beyond the data section"), std::string::npos) << reason;
}

TEST_F(SafetensorsTest, UnknownDtypeIsRefusedByName) {
  const fs::path path = raw_file(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4);
  const std::string reason = refusal(path);
  EXPECT_NE(reason.find("unsupported dtype 'F16'"), std::string::npos) << reason;
}

TEST_F(SafetensorsTest, ByteLengthDisagreeingWithShapeIsRefused) {
  const fs::path path = raw_file(R"({"x":{"dtype":"F64","shape":[3],"data_offsets":[0,16]}})", 16);
  const std::string reason = refusal(path);
  EXPECT_NE(reason.find("holds 16 bytes but F64 [3] needs 24"), std::string::npos) << reason;
}

TEST_F(SafetensorsTest, OverlappingTensorsAreRefused) {
  const fs::path path = raw_file(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
  EXPECT_NE(refusal(path).find("overlap"), std::string::npos) << refusal(path);
}

TEST_F(SafetensorsTest, WritingBytesThatDisagreeWithShapeIsRefused) {
  std::map<std::string, HostTensor> tensors;
  HostTensor tensor = HostTensor::zeros(DType::float32, {2});
  tensor.shape = {3};
  tensors.emplace("x", std::move(tensor));
  auto written = rlk::write_safetensors(file("c.safetensors"), tensors);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().to_string().find("'x'"), std::string::npos) << written.error().to_string();
}

}  // namespace
