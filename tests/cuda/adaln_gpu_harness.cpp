#include "adaln_gpu_harness.hpp"

#include <cmath>
#include <sstream>

namespace rlk::cuda_test {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

namespace {
// Makes `device` current for a scope.
struct OnDevice {
  explicit OnDevice(int device) {
    check_cuda(cudaGetDevice(&previous), "cudaGetDevice");
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~OnDevice() { cudaSetDevice(previous); }
  int previous = 0;
};
}  // namespace

DeviceTensor::DeviceTensor(const HostTensor& host, int device)
    : dtype_(host.dtype), shape_(host.shape), bytes_(host.bytes.size()), device_(device) {
  OnDevice on(device);
  check_cuda(cudaMalloc(&data_, bytes_), "cudaMalloc");
  check_cuda(cudaMemcpy(data_, host.bytes.data(), bytes_, cudaMemcpyHostToDevice), "upload");
}

DeviceTensor::DeviceTensor(DType dtype, std::vector<std::int64_t> shape, int device)
    : dtype_(dtype), shape_(std::move(shape)), device_(device) {
  std::int64_t count = 1;
  for (auto e : shape_) count *= e;
  bytes_ = static_cast<std::size_t>(count) * element_size(dtype);
  OnDevice on(device);
  check_cuda(cudaMalloc(&data_, bytes_), "cudaMalloc");
  check_cuda(cudaMemset(data_, 0xFF, bytes_), "poison");
  check_cuda(cudaDeviceSynchronize(), "poison (synchronize)");
}

DeviceTensor::~DeviceTensor() {
  if (data_ != nullptr) {
    OnDevice on(device_);
    cudaFree(data_);
  }
}

DLTensor DeviceTensor::view() const {
  DLTensor t{};
  t.data = data_;
  t.device = {kDLCUDA, device_};
  t.ndim = static_cast<int>(shape_.size());
  t.dtype = to_dlpack(dtype_);
  t.shape = const_cast<std::int64_t*>(shape_.data());
  return t;
}

HostTensor DeviceTensor::download() const {
  HostTensor host{dtype_, shape_, std::vector<std::byte>(bytes_)};
  OnDevice on(device_);
  check_cuda(cudaDeviceSynchronize(), "synchronize before download");
  check_cuda(cudaMemcpy(host.bytes.data(), data_, bytes_, cudaMemcpyDeviceToHost), "download");
  return host;
}

namespace {

// The device side of one forward + backward call: inputs uploaded, outputs poisoned, a
// workspace large enough for either direction.
struct GpuCall {
  GpuCall(const Op& op, const Inputs& in)
      : device(op.device().index),
        temb(in.temb, device),
        weight(in.weight, device),
        bias(in.bias, device),
        grad_out(in.grad_out, device),
        out(in.temb.dtype, {in.temb.shape[0], N}, device),
        grad_temb(in.temb.dtype, {in.temb.shape[0], K}, device),
        grad_weight(in.temb.dtype, {N, K}, device),
        grad_bias(in.temb.dtype, {N}, device),
        forward{{"temb", temb.view()}, {"weight", weight.view()}, {"bias", bias.view()}, {"out", out.view()}},
        backward{{"temb", temb.view()},           {"weight", weight.view()},
                 {"grad_out", grad_out.view()},   {"grad_temb", grad_temb.view()},
                 {"grad_weight", grad_weight.view()}, {"grad_bias", grad_bias.view()}} {
    const auto fwd_bytes = op.workspace_bytes(Direction::forward, forward);
    const auto bwd_bytes = op.workspace_bytes(Direction::backward, backward);
    if (!fwd_bytes || !bwd_bytes) throw std::runtime_error("workspace_bytes failed");
    bytes = std::max<std::uint64_t>({*fwd_bytes, *bwd_bytes, 16});
    OnDevice on(device);
    check_cuda(cudaMalloc(&workspace, bytes), "workspace");
  }
  ~GpuCall() {
    OnDevice on(device);
    cudaFree(workspace);
  }
  GpuCall(const GpuCall&) = delete;
  GpuCall& operator=(const GpuCall&) = delete;

  RunOptions options(cudaStream_t stream) const { return RunOptions{stream, workspace, bytes}; }
  Outputs download() const { return {out.download(), grad_temb.download(), grad_weight.download(), grad_bias.download()}; }

  int device;
  DeviceTensor temb, weight, bias, grad_out, out, grad_temb, grad_weight, grad_bias;
  TensorMap forward, backward;
  void* workspace = nullptr;
  std::uint64_t bytes = 0;
};

}  // namespace

Outputs run_on_gpu(const Op& op, const Inputs& in, cudaStream_t stream) {
  GpuCall call(op, in);
  auto f = op.forward(call.forward, call.options(stream));
  auto b = f ? op.backward(call.backward, call.options(stream)) : f;
  if (!b) throw std::runtime_error(b.error().to_string());
  return call.download();
}

std::vector<Outputs> run_through_graph(const Op& op, const Inputs& in, cudaStream_t stream, int launches) {
  GpuCall call(op, in);
  OnDevice on(call.device);
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  auto f = op.forward(call.forward, call.options(stream));
  auto b = f ? op.backward(call.backward, call.options(stream)) : f;
  const cudaError_t captured = cudaStreamEndCapture(stream, &graph);
  if (!b) throw std::runtime_error("inside the capture: " + b.error().to_string());
  check_cuda(captured, "end capture");
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  std::vector<Outputs> outputs;
  for (int i = 0; i < launches; ++i) {
    check_cuda(cudaGraphLaunch(exec, stream), "graph launch");
    check_cuda(cudaStreamSynchronize(stream), "synchronize");
    outputs.push_back(call.download());
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return outputs;
}

namespace {

DLTensor host_view(const HostTensor& t) {
  DLTensor v{};
  v.data = const_cast<std::byte*>(t.bytes.data());
  v.device = {kDLCPU, 0};
  v.ndim = static_cast<int>(t.shape.size());
  v.dtype = to_dlpack(t.dtype);
  v.shape = const_cast<std::int64_t*>(t.shape.data());
  return v;
}

HostTensor host_output(DType dtype, std::vector<std::int64_t> shape) {
  HostTensor t{dtype, std::move(shape), {}};
  t.bytes.assign(static_cast<std::size_t>(t.count()) * element_size(dtype), std::byte{0xFF});
  return t;
}

}  // namespace

Outputs run_reference(const Inputs& in) {
  static auto registry = Registry::open();
  if (!registry) throw std::runtime_error(registry.error().to_string());
  auto op = (*registry)->get_op(kKey, "cpu");
  if (!op) throw std::runtime_error(op.error().to_string());
  const DType dtype = in.temb.dtype;
  const std::int64_t B = in.temb.shape[0];
  Outputs o{host_output(dtype, {B, N}), host_output(dtype, {B, K}), host_output(dtype, {N, K}), host_output(dtype, {N})};
  auto f = op->forward({{"temb", host_view(in.temb)}, {"weight", host_view(in.weight)}, {"bias", host_view(in.bias)},
                        {"out", host_view(o.out)}});
  if (!f) throw std::runtime_error(f.error().to_string());
  auto b = op->backward({{"temb", host_view(in.temb)}, {"weight", host_view(in.weight)}, {"grad_out", host_view(in.grad_out)},
                         {"grad_temb", host_view(o.grad_temb)}, {"grad_weight", host_view(o.grad_weight)},
                         {"grad_bias", host_view(o.grad_bias)}});
  if (!b) throw std::runtime_error(b.error().to_string());
  return o;
}

std::map<std::string, std::vector<double>> run_oracle(const Inputs& in) {
  const std::int64_t B = in.temb.shape[0];
  auto widen = [](const HostTensor& t) {
    std::vector<double> v(static_cast<std::size_t>(t.count()));
    for (std::int64_t i = 0; i < t.count(); ++i) v[i] = t.value(i);
    return v;
  };
  std::map<std::string, std::vector<double>> values{{"temb", widen(in.temb)}, {"weight", widen(in.weight)},
                                                    {"bias", widen(in.bias)}, {"grad_out", widen(in.grad_out)},
                                                    {"out", std::vector<double>(B * N)}, {"grad_temb", std::vector<double>(B * K)},
                                                    {"grad_weight", std::vector<double>(N * K)}, {"grad_bias", std::vector<double>(N)}};
  std::map<std::string, std::vector<std::int64_t>> shapes{{"temb", {B, K}}, {"weight", {N, K}}, {"bias", {N}},
                                                          {"grad_out", {B, N}}, {"out", {B, N}}, {"grad_temb", {B, K}},
                                                          {"grad_weight", {N, K}}, {"grad_bias", {N}}};
  auto view = [&](const std::string& name) {
    DLTensor v{};
    v.data = values[name].data();
    v.device = {kDLCPU, 0};
    v.ndim = static_cast<int>(shapes[name].size());
    v.dtype = to_dlpack(DType::float64);
    v.shape = shapes[name].data();
    return v;
  };
  const auto* entry = reference::find_reference(kKey);
  const DType exec = in.temb.dtype;
  auto f = entry->oracle(Direction::forward, exec,
                         {{"temb", view("temb")}, {"weight", view("weight")}, {"bias", view("bias")}, {"out", view("out")}}, 0);
  if (!f) throw std::runtime_error(f.error().to_string());
  auto b = entry->oracle(Direction::backward, exec,
                         {{"temb", view("temb")}, {"weight", view("weight")}, {"grad_out", view("grad_out")},
                          {"grad_temb", view("grad_temb")}, {"grad_weight", view("grad_weight")}, {"grad_bias", view("grad_bias")}},
                         0);
  if (!b) throw std::runtime_error(b.error().to_string());
  return values;
}

std::int64_t count_out_of_tolerance(const HostTensor& got, const std::vector<double>& ref, Tolerance tol, std::string& worst) {
  std::int64_t bad = 0;
  double worst_excess = -1;
  for (std::int64_t i = 0; i < got.count(); ++i) {
    const double x = got.value(i);
    const double bound = tol.atol + tol.rtol * std::fabs(ref[i]);
    const double error = std::fabs(x - ref[i]);
    // NaN compares false: an unwritten (poisoned) or NaN element counts as out of tolerance.
    if (!(error <= bound) && !(std::isinf(ref[i]) && x == ref[i])) {
      ++bad;
      const double excess = std::isnan(error) ? INFINITY : error - bound;
      if (excess > worst_excess) {
        worst_excess = excess;
        std::ostringstream text;
        text << "element " << i << ": got " << x << ", oracle " << ref[i] << ", bound " << bound;
        worst = text.str();
      }
    }
  }
  return bad;
}

void expect_within(const char* name, const HostTensor& got, const std::vector<double>& ref, Tolerance tol) {
  std::string worst;
  const auto bad = count_out_of_tolerance(got, ref, tol, worst);
  EXPECT_EQ(bad, 0) << name << ": " << bad << " elements out of tolerance; worst " << worst;
}

Tolerance tolerance_of(DType dtype) {
  static auto registry = Registry::open();
  return (*registry)->find_spec(kKey)->numeric(dtype)->tolerance;
}

std::optional<Op> cuda_op_or_skip_reason(int device, std::string& reason) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    reason = "no CUDA device on this machine";
    return std::nullopt;
  }
  if (device >= count) {
    reason = "needs cuda:" + std::to_string(device) + " but only " + std::to_string(count) + " CUDA device(s) are visible";
    return std::nullopt;
  }
  static auto registry = Registry::open();
  if (!registry) throw std::runtime_error(registry.error().to_string());
  auto op = (*registry)->get_op(kKey, Device{Platform::cuda, device});
  if (!op) throw std::runtime_error(op.error().to_string());  // a GPU is present: refusing is a failure
  return *op;
}

}  // namespace rlk::cuda_test
