#include "cuda_graph.hpp"

#include <string>

#ifdef RLK_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace rlk::conform {

#ifdef RLK_WITH_CUDA
namespace {

Result<void> check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return {};
  return fail(ErrorCode::runtime_error, std::string(what) + ": " + cudaGetErrorString(status));
}

}  // namespace

Result<void> capture_and_replay(const tools::Stream& stream, const std::function<Result<void>()>& launch) {
  auto s = static_cast<cudaStream_t>(stream.handle());
  if (auto r = check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"); !r) return r;
  auto launched = launch();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (!launched) return std::unexpected(launched.error().with_context("while capturing a CUDA graph"));
  if (auto r = check(ended, "cudaStreamEndCapture"); !r) return r;
  cudaGraphExec_t exec = nullptr;
  auto instantiated = check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(graph);
  if (!instantiated) return instantiated;
  auto replayed = check(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  if (replayed) replayed = check(cudaStreamSynchronize(s), "cudaStreamSynchronize after the graph");
  cudaGraphExecDestroy(exec);
  return replayed;
}
#else
Result<void> capture_and_replay(const tools::Stream& stream, const std::function<Result<void>()>&) {
  return fail(ErrorCode::not_implemented, to_string(stream.device()) + ": CUDA graphs need a build with RLK_BUILD_CUDA=ON");
}
#endif

}  // namespace rlk::conform
