// qwenimage_adaln_mod_projection's ReferenceEntry: reads B, K, N from the tensor shapes and
// dispatches on dtype to the model functions of adaln_mod_projection.hpp.
#include "qwenimage/adaln_mod_projection_entry.hpp"

#include <cstddef>
#include <string>

#include "qwenimage/adaln_mod_projection.hpp"

namespace rlk::reference::qwenimage {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kBfloat16{kDLBfloat, 16, 1};
constexpr DLDataType kFloat64{kDLFloat, 64, 1};

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// The arguments are validated against the spec before they get here; these checks only keep
// a misuse of the entry from reading the wrong memory, and name the argument when they fail.
Result<const DLTensor*> find_tensor(const TensorMap& args, const std::string& name,
                                    DLDataType dtype) {
  const auto found = args.find(name);
  if (found == args.end()) {
    return fail(ErrorCode::invalid_argument, "argument '" + name + "' is missing");
  }
  const DLTensor& tensor = found->second;
  if (!same_dtype(tensor.dtype, dtype)) {
    return fail(ErrorCode::invalid_argument,
                "argument '" + name + "' does not have the dtype of the call");
  }
  if (tensor.device.device_type != kDLCPU) {
    return fail(ErrorCode::invalid_argument, "argument '" + name + "' is not a CPU tensor");
  }
  if (!is_row_major_contiguous(tensor)) {
    return fail(ErrorCode::invalid_argument,
                "argument '" + name + "' is not row-major contiguous");
  }
  return &tensor;
}

template <class T>
Result<T*> data_of(const TensorMap& args, const std::string& name, DLDataType dtype) {
  auto tensor = find_tensor(args, name, dtype);
  if (!tensor) {
    return std::unexpected(tensor.error());
  }
  return reinterpret_cast<T*>(static_cast<std::byte*>((*tensor)->data) + (*tensor)->byte_offset);
}

// B and K from temb [B, K], N from weight [N, K].
Result<AdalnShape> shape_of(const TensorMap& args, DLDataType dtype) {
  auto temb = find_tensor(args, "temb", dtype);
  if (!temb) {
    return std::unexpected(temb.error());
  }
  auto weight = find_tensor(args, "weight", dtype);
  if (!weight) {
    return std::unexpected(weight.error());
  }
  if ((*temb)->ndim != 2) {
    return fail(ErrorCode::invalid_argument, "argument 'temb' must be two-dimensional [B, K]");
  }
  if ((*weight)->ndim != 2 || (*weight)->shape[1] != (*temb)->shape[1]) {
    return fail(ErrorCode::invalid_argument, "argument 'weight' must be [N, K] with temb's K");
  }
  return AdalnShape{.B = (*temb)->shape[0], .K = (*temb)->shape[1], .N = (*weight)->shape[0]};
}

// Calls forward(shape, temb, weight, bias, out) or
// backward(shape, temb, weight, grad_out, grad_temb, grad_weight, grad_bias) with the data
// pointers of the named arguments, all of element type T and dtype `dtype`.
template <class T, class Forward, class Backward>
Result<void> dispatch(Direction direction, const TensorMap& args, DLDataType dtype,
                      const Forward& forward, const Backward& backward) {
  const auto shape = shape_of(args, dtype);
  if (!shape) {
    return std::unexpected(shape.error());
  }
  // shape_of has checked temb and weight.
  const auto temb = data_of<const T>(args, "temb", dtype);
  const auto weight = data_of<const T>(args, "weight", dtype);
  if (direction == Direction::forward) {
    const auto bias = data_of<const T>(args, "bias", dtype);
    if (!bias) {
      return std::unexpected(bias.error());
    }
    const auto out = data_of<T>(args, "out", dtype);
    if (!out) {
      return std::unexpected(out.error());
    }
    forward(*shape, *temb, *weight, *bias, *out);
    return {};
  }
  const auto grad_out = data_of<const T>(args, "grad_out", dtype);
  if (!grad_out) {
    return std::unexpected(grad_out.error());
  }
  const auto grad_temb = data_of<T>(args, "grad_temb", dtype);
  const auto grad_weight = data_of<T>(args, "grad_weight", dtype);
  const auto grad_bias = data_of<T>(args, "grad_bias", dtype);
  for (const auto* pointer : {&grad_temb, &grad_weight, &grad_bias}) {
    if (!*pointer) return std::unexpected(pointer->error());
  }
  backward(*shape, *temb, *weight, *grad_out, *grad_temb, *grad_weight, *grad_bias);
  return {};
}

template <class T>
Result<void> run_typed(Direction direction, const TensorMap& args, DLDataType dtype,
                       int threads) {
  return dispatch<T>(
      direction, args, dtype,
      [threads](AdalnShape shape, const T* temb, const T* weight, const T* bias, T* out) {
        adaln_forward(temb, weight, bias, out, shape, threads);
      },
      [threads](AdalnShape shape, const T* temb, const T* weight, const T* grad_out,
                T* grad_temb, T* grad_weight, T* grad_bias) {
        adaln_backward(temb, weight, grad_out, grad_temb, grad_weight, grad_bias, shape, threads);
      });
}

Result<void> run(Direction direction, const TensorMap& args, int threads) {
  const auto temb = args.find("temb");
  if (temb == args.end()) {
    return fail(ErrorCode::invalid_argument, "argument 'temb' is missing");
  }
  const DLDataType dtype = temb->second.dtype;
  if (same_dtype(dtype, kFloat32)) {
    return run_typed<float>(direction, args, dtype, threads);
  }
  if (same_dtype(dtype, kBfloat16)) {
    return run_typed<bfloat16>(direction, args, dtype, threads);
  }
  return fail(ErrorCode::invalid_argument,
              "argument 'temb': the reference runs float32 or bfloat16 only");
}

Result<void> oracle(Direction direction, DType execution, const TensorMap& args, int threads) {
  if (execution != DType::float32 && execution != DType::bfloat16) {
    return fail(ErrorCode::invalid_argument,
                "execution dtype: the oracle models float32 or bfloat16 execution only");
  }
  return dispatch<double>(
      direction, args, kFloat64,
      [execution, threads](AdalnShape shape, const double* temb, const double* weight,
                           const double* bias, double* out) {
        adaln_forward_oracle(execution, temb, weight, bias, out, shape, threads);
      },
      [execution, threads](AdalnShape shape, const double* temb, const double* weight,
                           const double* grad_out, double* grad_temb, double* grad_weight,
                           double* grad_bias) {
        adaln_backward_oracle(execution, temb, weight, grad_out, grad_temb, grad_weight,
                              grad_bias, shape, threads);
      });
}

}  // namespace

const ReferenceEntry& qwenimage_adaln_mod_projection_reference() {
  static constexpr ReferenceEntry kEntry{
      .key = "qwenimage_adaln_mod_projection", .run = &run, .oracle = &oracle};
  return kEntry;
}

}  // namespace rlk::reference::qwenimage
