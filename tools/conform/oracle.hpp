// The two references every accuracy number is measured against, run on the host: the FP64
// oracle (reference.hpp: storage values in float64, the contract's intermediate rounding
// for the execution dtype) and the built-in CPU reference in the execution dtype.
#pragma once

#include <list>
#include <memory>

#include "call.hpp"
#include "layout.hpp"
#include "rlk/reference.hpp"

namespace rlk::conform {

class HostReferences {
 public:
  HostReferences(const reference::ReferenceEntry& entry, const OperatorLayout& layout) : entry_(&entry), layout_(&layout) {}

  // Every written argument of `direction`, as float64 tensors.
  Result<HostOutputs> oracle(Direction direction, DType execution, const CallInputs& inputs);
  // Every written argument of `direction` in the execution dtype of the inputs.
  Result<HostOutputs> reference(Direction direction, const CallInputs& inputs);

 private:
  const reference::ReferenceEntry* entry_;
  const OperatorLayout* layout_;
  // float64 copies of the last shared inputs (a weight is converted once per seed); a list, so
  // that evicting one entry leaves the others' views valid.
  std::list<std::pair<std::shared_ptr<const HostTensor>, HostTensor>> converted_;
};

HostTensor to_float64(const HostTensor& tensor);

}  // namespace rlk::conform
