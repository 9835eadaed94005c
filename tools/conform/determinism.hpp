// The determinism case, shared by the gate and by the hidden `--print-output-sha256` mode
// in which `rlk conform` reruns it in a fresh process.
#pragma once

#include <map>
#include <string>

#include "common/device_memory.hpp"
#include "workbench.hpp"

namespace rlk::conform {

// "direction/output" -> outputs' bytes, for the first `batch` rows of `seed`'s pool, every
// direction, run on `stream` (the executor's own when null).
using CaseOutputs = std::map<std::string, HostTensor>;
Result<CaseOutputs> run_determinism_case(Workbench& bench, std::uint64_t seed, DType dtype, std::int64_t batch,
                                         const tools::Stream* stream = nullptr);
// The same case with each direction's run captured into a CUDA graph and replayed.
Result<CaseOutputs> run_determinism_case_in_graph(Workbench& bench, std::uint64_t seed, DType dtype, std::int64_t batch);

// "direction/output" -> SHA-256 of the bytes.
std::map<std::string, std::string> hashes_of(const CaseOutputs& outputs);

}  // namespace rlk::conform
