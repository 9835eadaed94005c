// The ReferenceEntry of qwenimage_adaln_mod_projection: the model functions of
// adaln_mod_projection.hpp behind the generic TensorMap interface of rlk/reference.hpp.
#pragma once

#include "rlk/reference.hpp"

namespace rlk::reference::qwenimage {

const ReferenceEntry& qwenimage_adaln_mod_projection_reference();

}  // namespace rlk::reference::qwenimage
