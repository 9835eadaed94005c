// CUDA stream capture for the determinism gate; in builds without CUDA every call refuses.
#pragma once

#include <functional>

#include "common/device_memory.hpp"
#include "rlk/error.hpp"

namespace rlk::conform {

// Captures what `launch` enqueues on `stream` into a CUDA graph, then launches the graph once
// on the same stream and waits for it. Nothing runs during capture itself.
Result<void> capture_and_replay(const tools::Stream& stream, const std::function<Result<void>()>& launch);

}  // namespace rlk::conform
