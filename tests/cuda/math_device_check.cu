// Compile check: every kernels/math header used in device code (Note [Shared kernel math]).
// Nothing runs it; building it with nvcc -Werror all-warnings proves that the shared math is
// valid __device__ code, which the CPU tests of the same functions cannot.
#include <cstdint>

#include "kernels/math/Half.h"
#include "kernels/math/IntDivider.h"
#include "kernels/math/OffsetCalculator.h"
#include "kernels/math/Philox.h"
#include "kernels/math/Reduce.h"
#include "tensor/core/Half.h"

namespace {

using namespace tensor::math;

__global__ void math_device_check(const uint16_t* half_in, uint16_t* half_out, float* f, uint32_t* u, double* d,
                                  int64_t* idx, IntDivider<uint32_t> div, IntDivider<uint64_t> div64,
                                  OffsetCalculator<2> oc, uint64_t seed, uint64_t offset, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;

  // Half and bfloat16, raw bits and the public types.
  const float x = half_bits_to_float(half_in[i]) + bf16_bits_to_float(half_in[i]);
  half_out[i] = static_cast<uint16_t>(float_to_half_bits(x) ^ float_to_bf16_bits(x));
  const tensor::Half h(x);
  const tensor::BFloat16 b = tensor::BFloat16::from_bits(half_in[i]);
  f[i] = static_cast<float>(h) + static_cast<float>(b);

  // Index arithmetic.
  const DivMod<uint32_t> qr = div.divmod(i);
  const Offsets<2> off = oc.get(i);
  u[i] = qr.div + div.mod(i) + off[0] + off[1] + static_cast<uint32_t>(div64.div(i) + qr.mod);

  // Philox and its transforms.
  uint32_t w[4];
  philox::draw(seed, offset + i, w);
  double normals[2];
  philox::box_muller(philox::u01_53(w[0], w[1]), philox::u01_53(w[2], w[3]), normals);
  idx[i] = philox::uniform_int(w[0], w[1], -5, 10);

  // Reduction steps, in float and double.
  Welford<double> wd = welford_combine(welford_update(welford_init<double>(), normals[0]),
                                       welford_update(welford_init<double>(), normals[1]));
  Welford<float> wf = welford_update(welford_init<float>(), x);
  LogSumExp<float> lf = logsumexp_combine(logsumexp_update(logsumexp_init<float>(), x), logsumexp_init<float>());
  LogSumExp<double> ld = logsumexp_update(logsumexp_init<double>(), normals[1]);
  const ValueIndex<float, int64_t> arg =
      arg_combine<true>(ValueIndex<float, int64_t>{x, i}, ValueIndex<float, int64_t>{f[i], int64_t(n) - i});
  const bool better = arg_better<false>(x, f[i]);
  d[i] = welford_var(wd, 1) + welford_std(wd, 0) + welford_std(wf, 1) + logsumexp_project(lf) +
         logsumexp_project(ld) + max_propagate_nan(normals[0], normals[1]) +
         min_propagate_nan(normals[0], normals[1]) + minmax_propagate_nan<true>(x, f[i]) + arg.value +
         static_cast<double>(arg.index) + (better ? 1.0 : 0.0) + static_cast<double>(max_propagate_nan<int>(1, 2));
}

}  // namespace

// Launches the check kernel, so that it is odr-used and compiled to SASS.
void tensor_math_device_check_launch(const uint16_t* half_in, uint16_t* half_out, float* f, uint32_t* u, double* d,
                                     int64_t* idx, uint32_t n) {
  const int64_t sizes[2] = {3, 5};
  const int64_t s0[2] = {4, 12}, s1[2] = {8, 0};
  const int64_t* strides[2] = {s0, s1};
  math_device_check<<<(n + 255) / 256, 256>>>(half_in, half_out, f, u, d, idx, IntDivider<uint32_t>(7),
                                              IntDivider<uint64_t>(9), OffsetCalculator<2>(2, sizes, strides), 1, 0,
                                              n);
}
