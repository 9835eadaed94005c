#include "executor.hpp"

#include <algorithm>

namespace rlk::conform {
namespace {

// Shared inputs kept on the device: the weights of the seeds and dtypes in use.
constexpr std::size_t kSharedUploads = 4;

}  // namespace

DLTensor make_tensor(void* data, const Device& device, DType dtype, const std::vector<std::int64_t>& shape) {
  DLTensor tensor{};
  tensor.data = data;
  tensor.device = device.platform == Platform::cuda ? DLDevice{kDLCUDA, device.index} : DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<std::int32_t>(shape.size());
  tensor.dtype = to_dlpack(dtype);
  tensor.shape = const_cast<std::int64_t*>(shape.data());
  return tensor;
}

Implementation implementation_of(const Op& op) {
  return Implementation{op.implementation(), op.device(),
                        [op](Direction direction, const TensorMap& args, const RunOptions& options) {
                          return op.run(direction, args, options);
                        },
                        [op](Direction direction, const TensorMap& args) { return op.workspace_bytes(direction, args); }};
}

Result<std::unique_ptr<Executor>> Executor::create(Implementation implementation, const OperatorLayout& layout) {
  auto stream = tools::Stream::create(implementation.device);
  if (!stream) return std::unexpected(stream.error());
  return std::unique_ptr<Executor>(new Executor(std::move(implementation), layout, std::move(*stream)));
}

Result<DLTensor> Executor::upload_shared(const std::shared_ptr<const HostTensor>& host) {
  auto found = std::ranges::find(shared_, host.get(), [](const SharedUpload& u) { return u.host.get(); });
  if (found == shared_.end()) {
    if (shared_.size() == kSharedUploads) shared_.pop_front();
    auto buffer = tools::DeviceBuffer::allocate(device(), std::max<std::size_t>(host->bytes.size(), 256));
    if (!buffer) return std::unexpected(buffer.error());
    if (auto r = copy_into(*buffer, 0, host->bytes); !r) return std::unexpected(r.error());
    shared_.push_back(SharedUpload{host, std::move(*buffer)});
    found = std::prev(shared_.end());
  }
  return make_tensor(found->device.data(), device(), host->dtype, host->shape);
}

Result<PreparedCall> Executor::prepare(Direction direction, const CallInputs& inputs, const tools::Stream& stream) {
  const DirectionLayout* d = layout_->find(direction);
  if (d == nullptr) return fail(ErrorCode::invalid_argument, "the operator writes nothing in " + std::string(to_string(direction)));
  PreparedCall call;
  call.direction = direction;
  call.batch = inputs.batch;
  call.shapes.reserve(d->inputs().size() + d->outputs().size());
  std::optional<DType> dtype;
  for (const ArgumentSpec* argument : d->inputs()) {
    const auto found = inputs.tensors.find(argument->name);
    if (found == inputs.tensors.end()) return fail(ErrorCode::internal, "no input '" + argument->name + "' for the call");
    const HostTensor& host = *found->second;
    dtype = host.dtype;
    call.shapes.push_back(host.shape);
    if (std::ranges::find(d->shared_inputs, argument) != d->shared_inputs.end()) {
      auto tensor = upload_shared(found->second);
      if (!tensor) return std::unexpected(tensor.error());
      tensor->shape = call.shapes.back().data();
      call.args.emplace(argument->name, *tensor);
      continue;
    }
    auto buffer = per_row_inputs_[argument->name].reserve(device(), host.bytes.size());
    if (!buffer) return std::unexpected(buffer.error());
    if (auto r = copy_into(**buffer, 0, host.bytes); !r) return std::unexpected(r.error());
    call.args.emplace(argument->name, make_tensor((*buffer)->data(), device(), host.dtype, call.shapes.back()));
  }
  call.dtype = dtype.value_or(DType::float32);
  for (const ArgumentSpec* argument : d->outputs()) {
    call.shapes.push_back(bind_batch(*argument, inputs.batch));
    const DLTensor tensor = make_tensor(nullptr, device(), call.dtype, call.shapes.back());
    GuardedOutput& output = outputs_[argument->name];
    if (auto r = output.arm(device(), byte_extent(tensor)); !r) return std::unexpected(r.error());
    call.args.emplace(argument->name, make_tensor(output.data(), device(), call.dtype, call.shapes.back()));
  }
  auto workspace = implementation_.workspace_bytes(direction, call.args);
  if (!workspace) return std::unexpected(workspace.error());
  call.options.stream = stream.handle();
  if (*workspace > 0) {
    auto buffer = workspace_.reserve(device(), *workspace);
    if (!buffer) return std::unexpected(buffer.error());
    call.options.workspace = (*buffer)->data();
    call.options.workspace_bytes = (*buffer)->size();
  }
  return call;
}

Result<HostOutputs> Executor::collect(const PreparedCall& call, const std::vector<std::string>& fetch) {
  const DirectionLayout* d = layout_->find(call.direction);
  HostOutputs outputs;
  for (const ArgumentSpec* argument : d->outputs()) {
    const GuardedOutput& output = outputs_.at(argument->name);
    if (auto r = output.check_canaries(); !r) return std::unexpected(r.error().with_context("output '" + argument->name + "'"));
    if (!fetch.empty() && std::ranges::find(fetch, argument->name) == fetch.end()) continue;
    auto tensor = output.read(call.dtype, bind_batch(*argument, call.batch));
    if (!tensor) return std::unexpected(tensor.error());
    outputs.emplace(argument->name, std::move(*tensor));
  }
  return outputs;
}

Result<HostOutputs> Executor::run(Direction direction, const CallInputs& inputs, const std::vector<std::string>& fetch,
                                  const tools::Stream* stream) {
  const tools::Stream& s = stream != nullptr ? *stream : stream_;
  auto call = prepare(direction, inputs, s);
  if (!call) return std::unexpected(call.error());
  if (auto r = implementation_.run(direction, call->args, call->options); !r) return std::unexpected(r.error());
  if (auto r = s.synchronize(); !r) return std::unexpected(r.error());
  return collect(*call, fetch);
}

}  // namespace rlk::conform
