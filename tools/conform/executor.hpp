// Runs an operator on its device for the gates: uploads inputs (each shared input once while
// it stays among the last few used), arms guarded and poisoned outputs, runs, checks the
// canaries of every output and reads back the outputs asked for.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "call.hpp"
#include "common/device_memory.hpp"
#include "guarded_buffer.hpp"
#include "layout.hpp"
#include "rlk/op.hpp"

namespace rlk::conform {

// A call whose inputs are on the device and whose outputs are armed; `args` and `options`
// are what the implementation gets (the determinism gate captures that run into a CUDA graph).
struct PreparedCall {
  Direction direction = Direction::forward;
  std::int64_t batch = 0;
  DType dtype = DType::float32;
  TensorMap args;
  RunOptions options;
  std::vector<std::vector<std::int64_t>> shapes;  // owns the DLTensor shape arrays
};

// What an Executor runs: a registry operator, or a negative-control baseline.
struct Implementation {
  std::string name;
  Device device;
  std::function<Result<void>(Direction, const TensorMap&, const RunOptions&)> run;
  std::function<Result<std::uint64_t>(Direction, const TensorMap&)> workspace_bytes;
};

Implementation implementation_of(const Op& op);

class Executor {
 public:
  static Result<std::unique_ptr<Executor>> create(Implementation implementation, const OperatorLayout& layout);

  const Implementation& implementation() const { return implementation_; }
  const Device& device() const { return implementation_.device; }
  const tools::Stream& stream() const { return stream_; }

  Result<PreparedCall> prepare(Direction direction, const CallInputs& inputs, const tools::Stream& stream);
  // Checks every output's canaries; reads the outputs named in `fetch` (all when empty).
  Result<HostOutputs> collect(const PreparedCall& call, const std::vector<std::string>& fetch);
  // prepare, the implementation, synchronize, collect.
  Result<HostOutputs> run(Direction direction, const CallInputs& inputs, const std::vector<std::string>& fetch = {},
                          const tools::Stream* stream = nullptr);

 private:
  Executor(Implementation implementation, const OperatorLayout& layout, tools::Stream stream)
      : implementation_(std::move(implementation)), layout_(&layout), stream_(std::move(stream)) {}
  Result<DLTensor> upload_shared(const std::shared_ptr<const HostTensor>& host);

  struct SharedUpload {
    std::shared_ptr<const HostTensor> host;
    tools::DeviceBuffer device;
  };

  Implementation implementation_;
  const OperatorLayout* layout_;
  tools::Stream stream_;
  std::map<std::string, ReusableBuffer, std::less<>> per_row_inputs_;
  std::deque<SharedUpload> shared_;
  std::map<std::string, GuardedOutput, std::less<>> outputs_;
  ReusableBuffer workspace_;
};

DLTensor make_tensor(void* data, const Device& device, DType dtype, const std::vector<std::int64_t>& shape);

}  // namespace rlk::conform
