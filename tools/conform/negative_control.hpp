// Negative controls: deliberately non-invariant implementations of an operator (each direction
// they serve; others refuse with not_implemented), which the batch-invariance comparison
// must catch. One entry per operator key,
// like the reference table; an operator without one gets an `unimplemented` record.
#pragma once

#include <string_view>

#include "executor.hpp"

namespace rlk::conform {

Result<Implementation> find_negative_control(std::string_view key, const Device& device);

}  // namespace rlk::conform
