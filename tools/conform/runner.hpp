// `rlk conform`: plans the spec's gates for one operator and device, runs them, and writes
// the report. Options mirror the command line (conform_command.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rlk/registry.hpp"

namespace rlk::conform {

struct ConformOptions {
  std::string key;
  std::string device = "cpu";
  std::string dtype;  // empty: every dtype the spec has a contract for
  std::string out;    // empty: rlk-conform-<key>-<device>
  bool quick = false;
  std::string weights;  // safetensors file
  std::string tensor;   // tensor in it
  std::vector<std::string> only;  // gates
  std::optional<std::uint64_t> seed;
  std::optional<std::int64_t> batch;
  std::string case_id;
  // Hidden: print "direction/output sha256" of the determinism case and exit (gate 8 runs
  // this in a fresh process).
  bool print_output_sha256 = false;
  std::int64_t pool_rows = 0;
};

// Ok when no record failed; otherwise an error naming the count and the report.
Result<void> run_conform(Registry& registry, const ConformOptions& options);

}  // namespace rlk::conform
