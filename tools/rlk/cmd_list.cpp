// rlk list: one row per spec with the state of each platform slot.
#include <algorithm>
#include <cctype>
#include <iostream>

#include "commands.hpp"

namespace rlk::cli {
namespace {

using Row = std::vector<std::string>;

// Columns are separated by at least two spaces, because states such as "not implemented"
// contain one.
void print_table(const std::vector<Row>& rows) {
  std::vector<std::size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

Result<void> list(Registry& registry) {
  Row header = {"KEY", "MODEL", "VERSION", "DTYPES"};
  for (Platform platform : kAllPlatforms) {
    std::string name(to_string(platform));
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    header.push_back(name);
  }
  std::vector<Row> rows = {header};
  for (const OpSpec& spec : registry.specs()) {
    std::string dtypes;
    for (DType dtype : spec.dtypes()) {
      if (!dtypes.empty()) dtypes += ',';
      dtypes += to_string(dtype);
    }
    Row row = {spec.key, spec.model, std::to_string(spec.version), dtypes};
    for (const SlotStatus& slot : registry.status(spec.key)) row.emplace_back(to_string(slot.state));
    rows.push_back(std::move(row));
  }
  print_table(rows);
  return {};
}

}  // namespace

void add_list_command(CLI::App& program, Command& selected) {
  CLI::App* command = program.add_subcommand(
      "list", "One row per operator spec: key, model, version, dtypes and the state of each platform slot");
  command->callback([&selected] { selected = list; });
}

}  // namespace rlk::cli
