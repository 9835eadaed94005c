// The table of CPU references, one entry per operator key; a new model adds one line.
#include <algorithm>
#include <array>

#include "qwenimage/adaln_mod_projection_entry.hpp"
#include "rlk/reference.hpp"

namespace rlk::reference {
namespace {

const auto& reference_table() {
  static const std::array kTable{
      qwenimage::qwenimage_adaln_mod_projection_reference(),
  };
  return kTable;
}

}  // namespace

const ReferenceEntry* find_reference(std::string_view key) {
  const auto& table = reference_table();
  const auto found =
      std::ranges::find(table, key, [](const ReferenceEntry& entry) { return entry.key; });
  return found == table.end() ? nullptr : &*found;
}

std::span<const ReferenceEntry> all_references() { return reference_table(); }

}  // namespace rlk::reference
