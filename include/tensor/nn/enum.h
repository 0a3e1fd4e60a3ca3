// Enum-like tags as libtorch's torch/enum.h: `tensor::kMean`, `tensor::kReLU`, `tensor::kFanIn`.
// Note [Enum tags]
// libtorch spells option values as tag objects (torch::kMean) and stores them in variants, so
// one tag (kLinear) can belong to several option types. Here each tag is an empty struct with a
// constant of the same name in namespace tensor; an option type is a small class constructible
// from exactly the tags it accepts (storing an enum), so `reduction(kSum)` compiles and
// `reduction(kReLU)` does not, with no std::variant in public headers. New option types (a conv
// padding_mode) add their tags here and a class like Reduction below.
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

namespace nn {

/// How a loss reduces its per-element values: kNone, kMean or kSum.
class Reduction {
 public:
  enum Kind : int8_t { None, Mean, Sum };
  constexpr Reduction(enumtype::kNone) : kind_(None) {}
  constexpr Reduction(enumtype::kMean) : kind_(Mean) {}
  constexpr Reduction(enumtype::kSum) : kind_(Sum) {}
  constexpr Kind kind() const { return kind_; }
  /// "none", "mean", "sum".
  constexpr const char* name() const { return kind_ == None ? "none" : kind_ == Mean ? "mean" : "sum"; }
  friend constexpr bool operator==(Reduction a, Reduction b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(Reduction a, Reduction b) { return a.kind_ != b.kind_; }

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
