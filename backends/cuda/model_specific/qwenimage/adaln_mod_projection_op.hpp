// qwenimage_adaln_mod_projection as served by the CUDA plugin.
#pragma once

#include "rlk/plugin_abi.h"

namespace rlk::cuda::qwenimage {

rlk_op_entry adaln_mod_projection_entry();

}  // namespace rlk::cuda::qwenimage
