// Enum-like tags as libtorch's torch/enum.h: `tensor::kMean`, `tensor::kReLU`, `tensor::kFanIn`.
// Note [Enum tags]
// libtorch spells option values as tag objects (torch::kMean) and stores them in variants, so
// one tag (kLinear) can belong to several option types. Here each tag is an empty struct with a
// constant of the same name in namespace tensor; an option type is a small class constructible
// from exactly the tags it accepts (storing an enum), so `reduction(kSum)` compiles and
// `reduction(kReLU)` does not, with no std::variant in public headers. New option types (a conv
// padding_mode) add their tags here and a class like LossReduction below.
#pragma once

#include <cstdint>

namespace tensor {
namespace enumtype {
#define TENSOR_ENUM_TAG(name) \
  struct name {               \
    constexpr name() = default; \
  };
TENSOR_ENUM_TAG(kNone)
TENSOR_ENUM_TAG(kMean)
TENSOR_ENUM_TAG(kSum)
TENSOR_ENUM_TAG(kLinear)
TENSOR_ENUM_TAG(kConv1D)
TENSOR_ENUM_TAG(kConv2D)
TENSOR_ENUM_TAG(kConv3D)
TENSOR_ENUM_TAG(kConvTranspose1D)
TENSOR_ENUM_TAG(kConvTranspose2D)
TENSOR_ENUM_TAG(kConvTranspose3D)
TENSOR_ENUM_TAG(kSigmoid)
TENSOR_ENUM_TAG(kTanh)
TENSOR_ENUM_TAG(kReLU)
TENSOR_ENUM_TAG(kGELU)
TENSOR_ENUM_TAG(kLeakyReLU)
TENSOR_ENUM_TAG(kSELU)
TENSOR_ENUM_TAG(kFanIn)
TENSOR_ENUM_TAG(kFanOut)
TENSOR_ENUM_TAG(kConstant)
TENSOR_ENUM_TAG(kReflect)
TENSOR_ENUM_TAG(kReplicate)
TENSOR_ENUM_TAG(kCircular)
TENSOR_ENUM_TAG(kBatchMean)
TENSOR_ENUM_TAG(kNearest)
TENSOR_ENUM_TAG(kBilinear)
TENSOR_ENUM_TAG(kBicubic)
TENSOR_ENUM_TAG(kTrilinear)
TENSOR_ENUM_TAG(kArea)
TENSOR_ENUM_TAG(kNearestExact)
TENSOR_ENUM_TAG(kLSTM)
TENSOR_ENUM_TAG(kGRU)
TENSOR_ENUM_TAG(kRNN_TANH)
TENSOR_ENUM_TAG(kRNN_RELU)
TENSOR_ENUM_TAG(kZeros)
TENSOR_ENUM_TAG(kValid)
TENSOR_ENUM_TAG(kSame)
TENSOR_ENUM_TAG(kMax)
#undef TENSOR_ENUM_TAG
}  // namespace enumtype

inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kConvTranspose1D kConvTranspose1D{};
inline constexpr enumtype::kConvTranspose2D kConvTranspose2D{};
inline constexpr enumtype::kConvTranspose3D kConvTranspose3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kGELU kGELU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kSELU kSELU{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kBatchMean kBatchMean{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kLSTM kLSTM{};
inline constexpr enumtype::kGRU kGRU{};
inline constexpr enumtype::kRNN_TANH kRNN_TANH{};
inline constexpr enumtype::kRNN_RELU kRNN_RELU{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kValid kValid{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kMax kMax{};

/// libtorch's at::Reduction: the integer `reduction` argument of the torch:: loss functions
/// (`tensor::mse_loss(x, y, tensor::Reduction::Sum)`). The nn::functional losses take the tag
/// form (`kSum`) in their options instead.
namespace Reduction {
enum Reduction : int64_t { None = 0, Mean = 1, Sum = 2, END = 3 };
}  // namespace Reduction

namespace nn {

/// How a loss reduces its per-element values: kNone, kMean or kSum.
class LossReduction {
 public:
  enum Kind : int8_t { None, Mean, Sum };
  constexpr LossReduction(enumtype::kNone) : kind_(None) {}
  constexpr LossReduction(enumtype::kMean) : kind_(Mean) {}
  constexpr LossReduction(enumtype::kSum) : kind_(Sum) {}
  constexpr Kind kind() const { return kind_; }
  /// "none", "mean", "sum".
  constexpr const char* name() const { return kind_ == None ? "none" : kind_ == Mean ? "mean" : "sum"; }
  friend constexpr bool operator==(LossReduction a, LossReduction b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(LossReduction a, LossReduction b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// The reduction of F::kl_div / nn::KLDivLoss: kNone, kBatchMean (sum / batch size), kSum or
/// kMean (over every element).
class KLDivReduction {
 public:
  enum Kind : int8_t { None, BatchMean, Sum, Mean };
  constexpr KLDivReduction(enumtype::kNone) : kind_(None) {}
  constexpr KLDivReduction(enumtype::kBatchMean) : kind_(BatchMean) {}
  constexpr KLDivReduction(enumtype::kSum) : kind_(Sum) {}
  constexpr KLDivReduction(enumtype::kMean) : kind_(Mean) {}
  constexpr Kind kind() const { return kind_; }
  /// "none", "batchmean", "sum", "mean".
  constexpr const char* name() const {
    return kind_ == None ? "none" : kind_ == BatchMean ? "batchmean" : kind_ == Sum ? "sum" : "mean";
  }
  friend constexpr bool operator==(KLDivReduction a, KLDivReduction b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(KLDivReduction a, KLDivReduction b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// The nonlinearity of nn::RNN / nn::RNNCell: kTanh or kReLU.
class RNNNonlinearity {
 public:
  enum Kind : int8_t { Tanh, ReLU };
  constexpr RNNNonlinearity(enumtype::kTanh) : kind_(Tanh) {}
  constexpr RNNNonlinearity(enumtype::kReLU) : kind_(ReLU) {}
  constexpr Kind kind() const { return kind_; }
  /// "tanh", "relu".
  constexpr const char* name() const { return kind_ == Tanh ? "tanh" : "relu"; }
  friend constexpr bool operator==(RNNNonlinearity a, RNNNonlinearity b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(RNNNonlinearity a, RNNNonlinearity b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// The cell of a recurrent layer stack (detail::RNNOptionsBase::mode): kLSTM, kGRU, kRNN_TANH
/// or kRNN_RELU.
class RNNMode {
 public:
  enum Kind : int8_t { LSTM, GRU, RNN_TANH, RNN_RELU };
  constexpr RNNMode(enumtype::kLSTM) : kind_(LSTM) {}
  constexpr RNNMode(enumtype::kGRU) : kind_(GRU) {}
  constexpr RNNMode(enumtype::kRNN_TANH) : kind_(RNN_TANH) {}
  constexpr RNNMode(enumtype::kRNN_RELU) : kind_(RNN_RELU) {}
  constexpr Kind kind() const { return kind_; }
  friend constexpr bool operator==(RNNMode a, RNNMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(RNNMode a, RNNMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// The mode of F::interpolate / nn::Upsample: kNearest, kLinear (3-d input), kBilinear (4-d),
/// kBicubic (4-d), kTrilinear (5-d), kArea, kNearestExact.
class InterpolateMode {
 public:
  enum Kind : int8_t { Nearest, Linear, Bilinear, Bicubic, Trilinear, Area, NearestExact };
  constexpr InterpolateMode(enumtype::kNearest) : kind_(Nearest) {}
  constexpr InterpolateMode(enumtype::kLinear) : kind_(Linear) {}
  constexpr InterpolateMode(enumtype::kBilinear) : kind_(Bilinear) {}
  constexpr InterpolateMode(enumtype::kBicubic) : kind_(Bicubic) {}
  constexpr InterpolateMode(enumtype::kTrilinear) : kind_(Trilinear) {}
  constexpr InterpolateMode(enumtype::kArea) : kind_(Area) {}
  constexpr InterpolateMode(enumtype::kNearestExact) : kind_(NearestExact) {}
  constexpr Kind kind() const { return kind_; }
  /// "nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact".
  constexpr const char* name() const {
    return kind_ == Nearest ? "nearest" : kind_ == Linear ? "linear" : kind_ == Bilinear ? "bilinear"
         : kind_ == Bicubic ? "bicubic" : kind_ == Trilinear ? "trilinear" : kind_ == Area ? "area" : "nearest-exact";
  }
  friend constexpr bool operator==(InterpolateMode a, InterpolateMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(InterpolateMode a, InterpolateMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// The nonlinearity after a layer, for init::calculate_gain and the kaiming initializers.
class Nonlinearity {
 public:
  enum Kind : int8_t { Linear, Conv1D, Conv2D, Conv3D, ConvTranspose1D, ConvTranspose2D, ConvTranspose3D,
                       Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
  constexpr Nonlinearity(enumtype::kLinear) : kind_(Linear) {}
  constexpr Nonlinearity(enumtype::kConv1D) : kind_(Conv1D) {}
  constexpr Nonlinearity(enumtype::kConv2D) : kind_(Conv2D) {}
  constexpr Nonlinearity(enumtype::kConv3D) : kind_(Conv3D) {}
  constexpr Nonlinearity(enumtype::kConvTranspose1D) : kind_(ConvTranspose1D) {}
  constexpr Nonlinearity(enumtype::kConvTranspose2D) : kind_(ConvTranspose2D) {}
  constexpr Nonlinearity(enumtype::kConvTranspose3D) : kind_(ConvTranspose3D) {}
  constexpr Nonlinearity(enumtype::kSigmoid) : kind_(Sigmoid) {}
  constexpr Nonlinearity(enumtype::kTanh) : kind_(Tanh) {}
  constexpr Nonlinearity(enumtype::kReLU) : kind_(ReLU) {}
  constexpr Nonlinearity(enumtype::kLeakyReLU) : kind_(LeakyReLU) {}
  constexpr Nonlinearity(enumtype::kSELU) : kind_(SELU) {}
  constexpr Kind kind() const { return kind_; }
  friend constexpr bool operator==(Nonlinearity a, Nonlinearity b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(Nonlinearity a, Nonlinearity b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// Which fan the kaiming initializers preserve: kFanIn (forward pass) or kFanOut (backward).
class FanMode {
 public:
  enum Kind : int8_t { FanIn, FanOut };
  constexpr FanMode(enumtype::kFanIn) : kind_(FanIn) {}
  constexpr FanMode(enumtype::kFanOut) : kind_(FanOut) {}
  constexpr Kind kind() const { return kind_; }
  friend constexpr bool operator==(FanMode a, FanMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(FanMode a, FanMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// How F::pad fills the border: kConstant (a value), kReflect (mirror without the edge),
/// kReplicate (repeat the edge) or kCircular (wrap around).
class PadMode {
 public:
  enum Kind : int8_t { Constant, Reflect, Replicate, Circular };
  constexpr PadMode(enumtype::kConstant) : kind_(Constant) {}
  constexpr PadMode(enumtype::kReflect) : kind_(Reflect) {}
  constexpr PadMode(enumtype::kReplicate) : kind_(Replicate) {}
  constexpr PadMode(enumtype::kCircular) : kind_(Circular) {}
  constexpr Kind kind() const { return kind_; }
  /// "constant", "reflect", "replicate", "circular".
  constexpr const char* name() const {
    return kind_ == Constant ? "constant" : kind_ == Reflect ? "reflect" : kind_ == Replicate ? "replicate" : "circular";
  }
  friend constexpr bool operator==(PadMode a, PadMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(PadMode a, PadMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

}  // namespace nn
}  // namespace tensor
