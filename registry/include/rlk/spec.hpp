// An operator spec: the single written statement of an operator's arguments, arithmetic
// contract, platform slots and conformance gates. Format: docs/specs.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rlk/device.hpp"
#include "rlk/error.hpp"
#include "rlk/tensor.hpp"

namespace rlk {

enum class Direction { forward, backward };
std::string_view to_string(Direction direction);

enum class ArgumentRole {
  input,     // read by the directions that use it
  output,    // written by forward
  gradient,  // written by backward
};
std::string_view to_string(ArgumentRole role);

// One dimension of a shape: a fixed extent or a symbol bound at call time (e.g. B).
struct Dim {
  std::string symbol;       // empty for fixed extents
  std::int64_t extent = 0;  // valid when symbol is empty
};

struct ArgumentSpec {
  std::string name;
  ArgumentRole role = ArgumentRole::input;
  std::vector<Dim> shape;
  std::vector<Direction> used_by;
  std::string description;

  bool used_in(Direction direction) const;
  bool writes() const { return role != ArgumentRole::input; }
};

struct SymbolSpec {
  std::string name;
  std::int64_t min = 1;
  std::optional<std::int64_t> max;
  std::string description;
};

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// The arithmetic contract for one execution dtype.
struct NumericContract {
  DType dtype = DType::float32;
  std::string storage;       // e.g. "bfloat16"
  std::string accumulation;  // e.g. "float32, compensated across tiles"
  std::string rounding;      // e.g. "once, round-to-nearest-even, at the output"
  Tolerance tolerance;       // against the FP64 oracle: |x - ref| <= atol + rtol * |ref|
};

enum class SlotKind {
  reference,    // the built-in CPU reference implementation
  plugin,       // a backend plugin library
  fail_closed,  // refused on purpose, with a reason
};
std::string_view to_string(SlotKind kind);

struct PlatformSlot {
  Platform platform = Platform::cpu;
  SlotKind kind = SlotKind::fail_closed;
  std::string library;  // plugin library name without prefix/suffix (plugin, optional for fail_closed)
  std::string reason;   // fail_closed reason
};

// How synthetic inputs are drawn for one argument in conformance runs.
struct InputDistribution {
  std::string argument;
  double mean = 0;
  double stddev = 1;
};

// Conformance parameters; every gate reads its sizes from here, never from code.
struct ConformanceSpec {
  std::string batch_symbol = "B";
  std::vector<InputDistribution> inputs;
  std::vector<std::uint64_t> seeds;
  std::vector<std::int64_t> accuracy_batches;
  std::vector<std::int64_t> invariance_batches;
  std::vector<std::pair<std::int64_t, std::int64_t>> boundary_sweeps;  // inclusive ranges
  std::int64_t workload_rows = 0;
  std::vector<std::vector<std::int64_t>> workload_chunkings;
  std::vector<std::int64_t> padding_batches;
  std::string cancellation_input;  // per-row input negated in the second half of the batch
  // Named draws of the shared (batch-free) inputs, such as one model layer's weights for two
  // streams; the accuracy gate runs each. Empty: one set, the seed's own draw.
  std::vector<std::string> parameter_sets;
  std::vector<std::string> gates;  // names of the gates that apply
};

struct OpSpec {
  std::string key;
  std::string model;
  int version = 0;
  std::string summary;
  std::string doc;  // path of the operator's doc page, relative to the repository
  std::vector<SymbolSpec> symbols;
  std::vector<ArgumentSpec> arguments;
  std::vector<NumericContract> numerics;  // one per allowed dtype
  std::vector<PlatformSlot> slots;        // one per platform, all five present
  ConformanceSpec conformance;

  std::filesystem::path file;
  std::string sha256;  // of the file's bytes

  const ArgumentSpec* argument(std::string_view name) const;
  const NumericContract* numeric(DType dtype) const;
  const PlatformSlot* slot(Platform platform) const;
  std::vector<const ArgumentSpec*> arguments_of(Direction direction) const;
  std::vector<DType> dtypes() const;
};

// Parses one spec. Every refusal names file:line:column and what was expected;
// unknown fields are errors.
Result<OpSpec> parse_spec_text(const std::string& text, const std::filesystem::path& file);
Result<OpSpec> load_spec_file(const std::filesystem::path& file);

// SHA-256 of bytes, lowercase hex (OpenSSL).
std::string sha256_hex(std::string_view bytes);

}  // namespace rlk
