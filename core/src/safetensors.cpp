#include "rlk/safetensors.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

namespace rlk {
namespace fs = std::filesystem;
using nlohmann::json;

// Tensor bytes are copied as they are in the file, which is little-endian by definition.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

// The format's own reader refuses larger headers; so do we, before allocating for one.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::string_view file_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bfloat16: return "BF16";
    case DType::float32: return "F32";
    case DType::float64: return "F64";
  }
  return "?";
}

std::optional<DType> dtype_from_file_name(std::string_view name) {
  if (name == "BF16") return DType::bfloat16;
  if (name == "F32") return DType::float32;
  if (name == "F64") return DType::float64;
  return std::nullopt;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Byte length of a tensor of `shape`, or nothing when it does not fit in 64 bits.
std::optional<std::uint64_t> byte_length(DType dtype, const std::vector<std::int64_t>& shape) {
  std::uint64_t length = element_size(dtype);
  for (std::int64_t extent : shape) {
    if (extent < 0) return std::nullopt;
    const auto e = static_cast<std::uint64_t>(extent);
    if (e != 0 && length > std::numeric_limits<std::uint64_t>::max() / e) return std::nullopt;
    length *= e;
  }
  return length;
}

Result<SafetensorsEntry> parse_entry(const std::string& name, const json& value, std::uint64_t data_bytes) {
  const std::string who = "tensor '" + name + "'";
  if (!value.is_object()) return fail(ErrorCode::invalid_argument, who + ": entry is not a JSON object");
  SafetensorsEntry entry;

  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) return fail(ErrorCode::invalid_argument, who + ": missing string field 'dtype'");
  const auto parsed = dtype_from_file_name(dtype->get<std::string>());
  if (!parsed) {
    return fail(ErrorCode::invalid_argument,
                who + ": unsupported dtype '" + dtype->get<std::string>() + "' (rl-kernel reads BF16, F32 and F64)");
  }
  entry.dtype = *parsed;

  const auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) return fail(ErrorCode::invalid_argument, who + ": missing array field 'shape'");
  for (const json& extent : *shape) {
    if (!extent.is_number_unsigned() || extent.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) {
      return fail(ErrorCode::invalid_argument, who + ": shape " + shape->dump() + " has an element that is not a non-negative integer");
    }
    entry.shape.push_back(extent.get<std::int64_t>());
  }

  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return fail(ErrorCode::invalid_argument, who + ": field 'data_offsets' must be [begin, end] with non-negative integers");
  }
  entry.begin = (*offsets)[0].get<std::uint64_t>();
  entry.end = (*offsets)[1].get<std::uint64_t>();
  const std::string range = "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
  if (entry.begin > entry.end) return fail(ErrorCode::invalid_argument, who + ": " + range + " ends before it begins");
  if (entry.end > data_bytes) {
    return fail(ErrorCode::invalid_argument,
                who + ": " + range + " lies beyond the data section (" + std::to_string(data_bytes) + " bytes)");
  }
  const auto expected = byte_length(entry.dtype, entry.shape);
  if (!expected || *expected != entry.end - entry.begin) {
    return fail(ErrorCode::invalid_argument,
                who + ": " + range + " holds " + std::to_string(entry.end - entry.begin) + " bytes but " +
                    std::string(file_dtype_name(entry.dtype)) + " " + shape_text(entry.shape) + " needs " +
                    (expected ? std::to_string(*expected) : "more than 2^64"));
  }
  return entry;
}

Result<SafetensorsMetadata> parse_metadata(const json& value) {
  if (!value.is_object()) return fail(ErrorCode::invalid_argument, "__metadata__ is not a JSON object");
  SafetensorsMetadata metadata;
  for (const auto& [name, text] : value.items()) {
    if (!text.is_string()) return fail(ErrorCode::invalid_argument, "__metadata__ value of '" + name + "' is not a string");
    metadata.emplace(name, text.get<std::string>());
  }
  return metadata;
}

Result<SafetensorsHeader> parse_header(std::ifstream& file, std::uint64_t file_bytes) {
  if (file_bytes < 8) {
    return fail(ErrorCode::invalid_argument, "file has " + std::to_string(file_bytes) + " bytes, fewer than the 8-byte header length");
  }
  std::array<unsigned char, 8> length_bytes{};
  if (!file.read(reinterpret_cast<char*>(length_bytes.data()), length_bytes.size())) {
    return fail(ErrorCode::io_error, "cannot read the header length");
  }
  std::uint64_t header_bytes = 0;
  for (std::size_t i = 0; i < length_bytes.size(); ++i) header_bytes |= std::uint64_t{length_bytes[i]} << (8 * i);
  if (header_bytes > kMaxHeaderBytes || header_bytes > file_bytes - 8) {
    return fail(ErrorCode::invalid_argument, "header length " + std::to_string(header_bytes) + " exceeds the " +
                                                 std::to_string(file_bytes - 8) + " bytes after the length field" +
                                                 (header_bytes > kMaxHeaderBytes ? " (or the 100 MB limit)" : "") +
                                                 "; the file is truncated or not safetensors");
  }
  std::string text(header_bytes, '\0');
  if (!file.read(text.data(), static_cast<std::streamsize>(header_bytes))) return fail(ErrorCode::io_error, "cannot read the header");

  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail(ErrorCode::invalid_argument, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return fail(ErrorCode::invalid_argument, "header is not a JSON object");

  SafetensorsHeader result;
  result.data_start = 8 + header_bytes;
  const std::uint64_t data_bytes = file_bytes - result.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      auto metadata = parse_metadata(value);
      if (!metadata) return std::unexpected(metadata.error());
      result.metadata = std::move(*metadata);
      continue;
    }
    auto entry = parse_entry(name, value, data_bytes);
    if (!entry) return std::unexpected(entry.error());
    result.tensors.emplace(name, std::move(*entry));
  }

  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> by_offset;
  for (const auto& [name, entry] : result.tensors) by_offset.emplace_back(&name, &entry);
  std::ranges::sort(by_offset, {}, [](const auto& item) { return std::pair(item.second->begin, item.second->end); });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const auto& [previous_name, previous] = by_offset[i - 1];
    const auto& [name, entry] = by_offset[i];
    if (entry->begin < previous->end) {
      return fail(ErrorCode::invalid_argument, "tensors '" + *previous_name + "' and '" + *name + "' overlap in the data section");
    }
  }
  return result;
}

Result<std::ifstream> open_for_reading(const fs::path& path, std::uint64_t& file_bytes) {
  std::error_code ec;
  file_bytes = fs::file_size(path, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot open: " + ec.message());
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(ErrorCode::io_error, "cannot open for reading");
  return file;
}

Result<HostTensor> read_entry(std::ifstream& file, const SafetensorsHeader& header, const std::string& name,
                              const SafetensorsEntry& entry) {
  HostTensor tensor{entry.dtype, entry.shape, {}};
  tensor.bytes.resize(entry.end - entry.begin);
  file.seekg(static_cast<std::streamoff>(header.data_start + entry.begin));
  if (!file.read(reinterpret_cast<char*>(tensor.bytes.data()), static_cast<std::streamsize>(tensor.bytes.size()))) {
    return fail(ErrorCode::io_error, "tensor '" + name + "': cannot read its " + std::to_string(tensor.bytes.size()) + " bytes");
  }
  return tensor;
}

std::unexpected<Error> at(const fs::path& path, const Error& error) { return std::unexpected(error.with_context(path.string())); }

}  // namespace

HostTensor HostTensor::zeros(DType dtype, std::vector<std::int64_t> shape) {
  HostTensor tensor{dtype, std::move(shape), {}};
  tensor.bytes.resize(static_cast<std::size_t>(tensor.element_count()) * element_size(dtype));
  return tensor;
}

std::int64_t HostTensor::element_count() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

DLTensor HostTensor::view() {
  DLTensor tensor{};
  tensor.data = bytes.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<std::int32_t>(shape.size());
  tensor.dtype = to_dlpack(dtype);
  tensor.shape = shape.data();
  return tensor;
}

Result<SafetensorsHeader> read_safetensors_header(const fs::path& path) {
  std::uint64_t file_bytes = 0;
  auto file = open_for_reading(path, file_bytes);
  if (!file) return at(path, file.error());
  auto header = parse_header(*file, file_bytes);
  if (!header) return at(path, header.error());
  return header;
}

Result<std::map<std::string, HostTensor>> read_safetensors(const fs::path& path) {
  std::uint64_t file_bytes = 0;
  auto file = open_for_reading(path, file_bytes);
  if (!file) return at(path, file.error());
  auto header = parse_header(*file, file_bytes);
  if (!header) return at(path, header.error());
  std::map<std::string, HostTensor> tensors;
  for (const auto& [name, entry] : header->tensors) {
    auto tensor = read_entry(*file, *header, name, entry);
    if (!tensor) return at(path, tensor.error());
    tensors.emplace(name, std::move(*tensor));
  }
  return tensors;
}

Result<HostTensor> read_safetensors_tensor(const fs::path& path, const std::string& name) {
  std::uint64_t file_bytes = 0;
  auto file = open_for_reading(path, file_bytes);
  if (!file) return at(path, file.error());
  auto header = parse_header(*file, file_bytes);
  if (!header) return at(path, header.error());
  const auto found = header->tensors.find(name);
  if (found == header->tensors.end()) {
    std::string names;
    for (const auto& [known, entry] : header->tensors) names += (names.empty() ? "" : ", ") + known;
    return at(path, Error(ErrorCode::invalid_argument, "no tensor named '" + name + "' (the file holds: " +
                                                           (names.empty() ? "none" : names) + ")"));
  }
  auto tensor = read_entry(*file, *header, name, found->second);
  if (!tensor) return at(path, tensor.error());
  return tensor;
}

Result<void> write_safetensors(const fs::path& path, const std::map<std::string, HostTensor>& tensors,
                               const SafetensorsMetadata& metadata) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") return at(path, Error(ErrorCode::invalid_argument, "'__metadata__' cannot name a tensor"));
    const auto expected = byte_length(tensor.dtype, tensor.shape);
    if (!expected || *expected != tensor.bytes.size()) {
      return at(path, Error(ErrorCode::invalid_argument,
                            "tensor '" + name + "' holds " + std::to_string(tensor.bytes.size()) + " bytes but " +
                                std::string(to_string(tensor.dtype)) + " " + shape_text(tensor.shape) + " needs " +
                                (expected ? std::to_string(*expected) : "more than 2^64")));
    }
    header[name] = {{"dtype", file_dtype_name(tensor.dtype)},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + tensor.bytes.size()}}};
    offset += tensor.bytes.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return at(path, Error(ErrorCode::io_error, "cannot open for writing"));
  std::array<char, 8> length_bytes{};
  for (std::size_t i = 0; i < length_bytes.size(); ++i) length_bytes[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  file.write(length_bytes.data(), length_bytes.size());
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, tensor] : tensors) {
    file.write(reinterpret_cast<const char*>(tensor.bytes.data()), static_cast<std::streamsize>(tensor.bytes.size()));
  }
  file.close();
  if (!file) return at(path, Error(ErrorCode::io_error, "write failed (disk full or file not writable)"));
  return {};
}

}  // namespace rlk
