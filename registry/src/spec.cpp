// Spec parsing with yaml-cpp. Every refusal carries file:line:column (from yaml-cpp marks)
// and what was expected there; unknown fields are refused, never ignored.
#include "rlk/spec.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

namespace rlk {
namespace {

// Thrown only inside this file and turned into an rlk::Error by parse_spec_text.
struct SpecProblem {
  std::string message;
};

class SpecReader {
 public:
  explicit SpecReader(std::filesystem::path file) : file_(std::move(file)) {}

  [[noreturn]] void refuse(const YAML::Node& node, const std::string& what) const {
    refuse_at(node.Mark(), what);
  }
  [[noreturn]] void refuse_at(const YAML::Mark& mark, const std::string& what) const {
    std::ostringstream text;
    text << file_.string();
    if (!mark.is_null()) text << ":" << mark.line + 1 << ":" << mark.column + 1;
    text << ": " << what;
    throw SpecProblem{text.str()};
  }

  void expect_map(const YAML::Node& node, const std::string& field,
                  std::initializer_list<std::string_view> allowed,
                  std::initializer_list<std::string_view> required) const {
    if (!node.IsMap()) refuse(node, "'" + field + "' must be a mapping");
    for (const auto& item : node) {
      const auto name = item.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string expected;
        for (auto a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
        refuse(item.first, "unknown field '" + name + "' in '" + field + "' (expected one of: " + expected + ")");
      }
    }
    for (auto name : required) {
      if (!node[std::string(name)]) refuse(node, "'" + field + "' is missing required field '" + std::string(name) + "'");
    }
  }

  std::string text(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) refuse(node, "'" + field + "' must be a string");
    return node.as<std::string>();
  }

  template <class Number>
  Number number(const YAML::Node& node, const std::string& field) const {
    Number value{};
    if (!node.IsScalar() || !YAML::convert<Number>::decode(node, value)) {
      refuse(node, "'" + field + "' must be a number");
    }
    return value;
  }

  std::vector<std::string> text_list(const YAML::Node& node, const std::string& field) const {
    if (!node.IsSequence()) refuse(node, "'" + field + "' must be a list");
    std::vector<std::string> values;
    for (const auto& item : node) values.push_back(text(item, field));
    return values;
  }

  template <class Number>
  std::vector<Number> number_list(const YAML::Node& node, const std::string& field) const {
    if (!node.IsSequence()) refuse(node, "'" + field + "' must be a list of numbers");
    std::vector<Number> values;
    for (const auto& item : node) values.push_back(number<Number>(item, field));
    return values;
  }

  OpSpec read(const YAML::Node& root) const;

 private:
  ArgumentSpec read_argument(const std::string& name, const YAML::Node& node, const OpSpec& spec) const;
  NumericContract read_numeric(const YAML::Node& key, const YAML::Node& node) const;
  PlatformSlot read_slot(const YAML::Node& key, const YAML::Node& node) const;
  ConformanceSpec read_conformance(const YAML::Node& node, const OpSpec& spec) const;

  std::filesystem::path file_;
};

OpSpec SpecReader::read(const YAML::Node& root) const {
  if (!root.IsMap()) refuse(root, "a spec must be a mapping at the top level");
  expect_map(root, "spec",
             {"key", "model", "version", "summary", "doc", "symbols", "arguments", "numerics", "platforms", "conformance"},
             {"key", "model", "version", "summary", "arguments", "numerics", "platforms"});
  OpSpec spec;
  spec.key = text(root["key"], "key");
  spec.model = text(root["model"], "model");
  if (spec.key.rfind(spec.model + "_", 0) != 0) {
    refuse(root["key"], "key '" + spec.key + "' must start with the model name '" + spec.model + "_'");
  }
  spec.version = number<int>(root["version"], "version");
  spec.summary = text(root["summary"], "summary");
  if (root["doc"]) spec.doc = text(root["doc"], "doc");

  if (const auto symbols = root["symbols"]) {
    if (!symbols.IsMap()) refuse(symbols, "'symbols' must be a mapping of symbol name to {min, max, description}");
    for (const auto& item : symbols) {
      SymbolSpec symbol;
      symbol.name = item.first.as<std::string>();
      expect_map(item.second, "symbols." + symbol.name, {"min", "max", "description"}, {});
      if (item.second["min"]) symbol.min = number<std::int64_t>(item.second["min"], "min");
      if (item.second["max"]) symbol.max = number<std::int64_t>(item.second["max"], "max");
      if (item.second["description"]) symbol.description = text(item.second["description"], "description");
      spec.symbols.push_back(symbol);
    }
  }

  const auto arguments = root["arguments"];
  if (!arguments.IsMap() || arguments.size() == 0) refuse(arguments, "'arguments' must be a non-empty mapping of argument name to its description");
  for (const auto& item : arguments) {
    spec.arguments.push_back(read_argument(item.first.as<std::string>(), item.second, spec));
  }
  for (Direction direction : {Direction::forward, Direction::backward}) {
    const auto used = spec.arguments_of(direction);
    const bool reads = std::any_of(used.begin(), used.end(), [](auto* a) { return !a->writes(); });
    const bool writes = std::any_of(used.begin(), used.end(), [](auto* a) { return a->writes(); });
    if (!used.empty() && (!reads || !writes)) {
      refuse(arguments, std::string(to_string(direction)) + " must read at least one input and write at least one output");
    }
  }

  const auto numerics = root["numerics"];
  if (!numerics.IsMap() || numerics.size() == 0) refuse(numerics, "'numerics' must map each allowed dtype (float32, bfloat16) to its contract");
  for (const auto& item : numerics) spec.numerics.push_back(read_numeric(item.first, item.second));

  const auto platforms = root["platforms"];
  expect_map(platforms, "platforms", {"cpu", "cuda", "rocm", "npu", "musa"}, {"cpu", "cuda", "rocm", "npu", "musa"});
  for (const auto& item : platforms) spec.slots.push_back(read_slot(item.first, item.second));

  if (const auto conformance = root["conformance"]) spec.conformance = read_conformance(conformance, spec);
  return spec;
}

ArgumentSpec SpecReader::read_argument(const std::string& name, const YAML::Node& node, const OpSpec& spec) const {
  expect_map(node, "arguments." + name, {"role", "shape", "used_by", "description"}, {"role", "shape"});
  ArgumentSpec argument;
  argument.name = name;
  const auto role = text(node["role"], "role");
  if (role == "input") argument.role = ArgumentRole::input;
  else if (role == "output") argument.role = ArgumentRole::output;
  else if (role == "gradient") argument.role = ArgumentRole::gradient;
  else refuse(node["role"], "unknown role '" + role + "' (expected input, output or gradient)");

  const auto shape = node["shape"];
  if (!shape.IsSequence() || shape.size() == 0) refuse(shape, "'shape' must be a non-empty list of extents and symbols, e.g. [B, 3072]");
  for (const auto& dim : shape) {
    Dim d;
    std::int64_t extent = 0;
    if (dim.IsScalar() && YAML::convert<std::int64_t>::decode(dim, extent)) {
      if (extent <= 0) refuse(dim, "a fixed extent must be positive");
      d.extent = extent;
    } else if (dim.IsScalar()) {
      d.symbol = dim.as<std::string>();
      const bool declared = std::any_of(spec.symbols.begin(), spec.symbols.end(),
                                        [&](const SymbolSpec& s) { return s.name == d.symbol; });
      if (!declared) refuse(dim, "symbol '" + d.symbol + "' is not declared under 'symbols'");
    } else {
      refuse(dim, "a shape entry must be a positive integer or a symbol name");
    }
    argument.shape.push_back(d);
  }

  if (node["used_by"]) {
    for (const auto& item : node["used_by"]) {
      const auto direction = text(item, "used_by");
      if (direction == "forward") argument.used_by.push_back(Direction::forward);
      else if (direction == "backward") argument.used_by.push_back(Direction::backward);
      else refuse(item, "unknown direction '" + direction + "' (expected forward or backward)");
    }
  } else if (argument.role == ArgumentRole::input) {
    argument.used_by = {Direction::forward, Direction::backward};
  } else {
    argument.used_by = {argument.role == ArgumentRole::output ? Direction::forward : Direction::backward};
  }
  if (argument.role == ArgumentRole::output && argument.used_in(Direction::backward)) {
    refuse(node, "an output is written by forward only; use role 'gradient' for backward results");
  }
  if (argument.role == ArgumentRole::gradient && argument.used_in(Direction::forward)) {
    refuse(node, "a gradient is written by backward only");
  }
  if (node["description"]) argument.description = text(node["description"], "description");
  return argument;
}

NumericContract SpecReader::read_numeric(const YAML::Node& key, const YAML::Node& node) const {
  NumericContract contract;
  const auto dtype_name = key.as<std::string>();
  auto dtype = parse_dtype(dtype_name);
  if (!dtype || *dtype == DType::float64 || dtype_name != to_string(*dtype)) {
    refuse(key, "unknown execution dtype '" + dtype_name + "' (expected float32 or bfloat16)");
  }
  contract.dtype = *dtype;
  expect_map(node, "numerics." + dtype_name, {"storage", "accumulation", "rounding", "tolerance"},
             {"storage", "accumulation", "rounding", "tolerance"});
  contract.storage = text(node["storage"], "storage");
  contract.accumulation = text(node["accumulation"], "accumulation");
  contract.rounding = text(node["rounding"], "rounding");
  expect_map(node["tolerance"], "numerics." + dtype_name + ".tolerance", {"atol", "rtol"}, {"atol", "rtol"});
  contract.tolerance.atol = number<double>(node["tolerance"]["atol"], "atol");
  contract.tolerance.rtol = number<double>(node["tolerance"]["rtol"], "rtol");
  if (contract.tolerance.atol < 0 || contract.tolerance.rtol < 0) refuse(node["tolerance"], "tolerances must be non-negative");
  return contract;
}

PlatformSlot SpecReader::read_slot(const YAML::Node& key, const YAML::Node& node) const {
  PlatformSlot slot;
  const auto name = key.as<std::string>();
  slot.platform = *parse_platform(name);
  expect_map(node, "platforms." + name, {"implementation", "library", "reason"}, {"implementation"});
  const auto kind = text(node["implementation"], "implementation");
  if (node["library"]) slot.library = text(node["library"], "library");
  if (node["reason"]) slot.reason = text(node["reason"], "reason");
  if (kind == "reference") {
    if (slot.platform != Platform::cpu) refuse(node["implementation"], "only the cpu slot can be 'reference'");
    slot.kind = SlotKind::reference;
  } else if (kind == "plugin") {
    if (slot.library.empty()) refuse(node, "a 'plugin' slot needs 'library: <name>'");
    slot.kind = SlotKind::plugin;
  } else if (kind == "fail_closed") {
    if (slot.reason.empty()) refuse(node, "a 'fail_closed' slot needs 'reason: <text>'");
    slot.kind = SlotKind::fail_closed;
  } else {
    refuse(node["implementation"], "unknown implementation '" + kind + "' (expected reference, plugin or fail_closed)");
  }
  return slot;
}

ConformanceSpec SpecReader::read_conformance(const YAML::Node& node, const OpSpec& spec) const {
  expect_map(node, "conformance",
             {"batch_symbol", "inputs", "seeds", "accuracy_batches", "invariance_batches", "boundary_sweeps",
              "workload_rows", "workload_chunkings", "padding_batches", "cancellation_input", "parameter_sets", "gates"},
             {"batch_symbol", "inputs", "seeds", "gates"});
  ConformanceSpec c;
  c.batch_symbol = text(node["batch_symbol"], "batch_symbol");
  if (std::none_of(spec.symbols.begin(), spec.symbols.end(), [&](auto& s) { return s.name == c.batch_symbol; })) {
    refuse(node["batch_symbol"], "batch_symbol '" + c.batch_symbol + "' is not declared under 'symbols'");
  }
  const auto inputs = node["inputs"];
  if (!inputs.IsMap()) refuse(inputs, "'conformance.inputs' must map input names to {mean, std}");
  for (const auto& item : inputs) {
    InputDistribution d;
    d.argument = item.first.as<std::string>();
    const ArgumentSpec* argument = spec.argument(d.argument);
    if (argument == nullptr || argument->role != ArgumentRole::input) {
      refuse(item.first, "'" + d.argument + "' is not an input argument of this spec");
    }
    expect_map(item.second, "conformance.inputs." + d.argument, {"mean", "std"}, {"std"});
    if (item.second["mean"]) d.mean = number<double>(item.second["mean"], "mean");
    d.stddev = number<double>(item.second["std"], "std");
    if (d.stddev <= 0) refuse(item.second["std"], "'std' must be positive: conformance never runs on constant data");
    c.inputs.push_back(d);
  }
  for (const auto& argument : spec.arguments) {
    if (argument.role == ArgumentRole::input &&
        std::none_of(c.inputs.begin(), c.inputs.end(), [&](auto& d) { return d.argument == argument.name; })) {
      refuse(inputs, "input '" + argument.name + "' has no distribution under 'conformance.inputs'");
    }
  }
  c.seeds = number_list<std::uint64_t>(node["seeds"], "seeds");
  if (node["accuracy_batches"]) c.accuracy_batches = number_list<std::int64_t>(node["accuracy_batches"], "accuracy_batches");
  if (node["invariance_batches"]) c.invariance_batches = number_list<std::int64_t>(node["invariance_batches"], "invariance_batches");
  if (const auto sweeps = node["boundary_sweeps"]) {
    if (!sweeps.IsSequence()) refuse(sweeps, "'boundary_sweeps' must be a list of [first, last] pairs");
    for (const auto& pair : sweeps) {
      const auto bounds = number_list<std::int64_t>(pair, "boundary_sweeps");
      if (bounds.size() != 2 || bounds[0] < 1 || bounds[1] < bounds[0]) refuse(pair, "expected [first, last] with 1 <= first <= last");
      c.boundary_sweeps.emplace_back(bounds[0], bounds[1]);
    }
  }
  if (node["workload_rows"]) c.workload_rows = number<std::int64_t>(node["workload_rows"], "workload_rows");
  if (const auto chunkings = node["workload_chunkings"]) {
    if (!chunkings.IsSequence()) refuse(chunkings, "'workload_chunkings' must be a list of lists of chunk sizes");
    for (const auto& chunking : chunkings) {
      auto sizes = number_list<std::int64_t>(chunking, "workload_chunkings");
      if (sizes.empty() || std::any_of(sizes.begin(), sizes.end(), [](auto s) { return s < 1; })) {
        refuse(chunking, "a chunking is a non-empty list of positive chunk sizes");
      }
      c.workload_chunkings.push_back(std::move(sizes));
    }
  }
  if (node["padding_batches"]) c.padding_batches = number_list<std::int64_t>(node["padding_batches"], "padding_batches");
  if (node["cancellation_input"]) {
    c.cancellation_input = text(node["cancellation_input"], "cancellation_input");
    const ArgumentSpec* argument = spec.argument(c.cancellation_input);
    if (argument == nullptr || argument->role != ArgumentRole::input) {
      refuse(node["cancellation_input"], "'" + c.cancellation_input + "' is not an input argument of this spec");
    }
  }
  if (const auto sets = node["parameter_sets"]) {
    if (!sets.IsSequence() || sets.size() == 0) refuse(sets, "'parameter_sets' must be a non-empty list of names");
    for (const auto& item : sets) {
      auto name = text(item, "parameter_sets");
      if (name.empty() || std::find(c.parameter_sets.begin(), c.parameter_sets.end(), name) != c.parameter_sets.end()) {
        refuse(item, "parameter set names must be non-empty and distinct ('" + name + "')");
      }
      c.parameter_sets.push_back(std::move(name));
    }
  }
  static const std::set<std::string> kKnownGates = {"accuracy", "batch_invariance", "workload", "repeat_and_padding",
                                                    "cancellation", "strict_math", "row_isolation", "determinism",
                                                    "negative_control"};
  for (const auto& gate : node["gates"]) {
    const auto name = text(gate, "gates");
    if (!kKnownGates.contains(name)) {
      refuse(gate, "unknown gate '" + name + "' (expected accuracy, batch_invariance, workload, repeat_and_padding, "
                   "cancellation, strict_math, row_isolation, determinism or negative_control)");
    }
    c.gates.push_back(name);
  }
  return c;
}

}  // namespace

std::string_view to_string(Direction direction) {
  return direction == Direction::forward ? "forward" : "backward";
}

std::string_view to_string(ArgumentRole role) {
  switch (role) {
    case ArgumentRole::input: return "input";
    case ArgumentRole::output: return "output";
    case ArgumentRole::gradient: return "gradient";
  }
  return "?";
}

std::string_view to_string(SlotKind kind) {
  switch (kind) {
    case SlotKind::reference: return "reference";
    case SlotKind::plugin: return "plugin";
    case SlotKind::fail_closed: return "fail_closed";
  }
  return "?";
}

bool ArgumentSpec::used_in(Direction direction) const {
  return std::find(used_by.begin(), used_by.end(), direction) != used_by.end();
}

const ArgumentSpec* OpSpec::argument(std::string_view name) const {
  for (const auto& a : arguments) if (a.name == name) return &a;
  return nullptr;
}

const NumericContract* OpSpec::numeric(DType dtype) const {
  for (const auto& n : numerics) if (n.dtype == dtype) return &n;
  return nullptr;
}

const PlatformSlot* OpSpec::slot(Platform platform) const {
  for (const auto& s : slots) if (s.platform == platform) return &s;
  return nullptr;
}

std::vector<const ArgumentSpec*> OpSpec::arguments_of(Direction direction) const {
  std::vector<const ArgumentSpec*> used;
  for (const auto& a : arguments) if (a.used_in(direction)) used.push_back(&a);
  return used;
}

std::vector<DType> OpSpec::dtypes() const {
  std::vector<DType> all;
  for (const auto& n : numerics) all.push_back(n.dtype);
  return all;
}

Result<OpSpec> parse_spec_text(const std::string& text, const std::filesystem::path& file) {
  SpecReader reader(file);
  try {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      reader.refuse_at(e.mark, "YAML syntax error: " + e.msg);
    }
    OpSpec spec = reader.read(root);
    spec.file = file;
    spec.sha256 = sha256_hex(text);
    return spec;
  } catch (const SpecProblem& problem) {
    return fail(ErrorCode::spec_invalid, problem.message);
  } catch (const YAML::Exception& e) {
    return fail(ErrorCode::spec_invalid, file.string() + ": " + e.what());
  }
}

Result<OpSpec> load_spec_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(ErrorCode::io_error, file.string() + ": cannot open spec file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse_spec_text(bytes.str(), file);
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace rlk
