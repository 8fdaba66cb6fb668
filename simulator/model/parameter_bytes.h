// Bytes a GPU keeps per model parameter under mixed-precision Adam, by part: the one table that
// the memory model, optimizer offload, the step builder's gradient traffic and the exporters read.
#pragma once

#include "simulator/spec/plan.h"

namespace ppsim {

// Bytes per parameter of mixed-precision Adam, by part (memory_model.h explains
// the sum and how ZeRO shards each part).
inline constexpr double kWeightBytesPerParam = 2;        // bf16/fp16 (also fp8 plans).
inline constexpr double kGradientBytesPerParam = 4;      // fp32 main gradients (the default
                                                         // but for fp16 plans).
inline constexpr double kHalfGradientBytesPerParam = 2;  // bf16/fp16 main gradients
                                                         // (grad_reduce_in_fp32 off).
inline constexpr double kOptimizerBytesPerParam = 12;    // fp32 master weights + Adam m, v.
// PyTorch FSDP under a bf16 mixed-precision policy (runtime.h fsdp_fp32_shards): the sharded
// parameters are fp32 and double as the master copy, so the optimizer adds only Adam's m and v.
inline constexpr double kFsdpShardBytesPerParam = 4;
inline constexpr double kAdamMomentsBytesPerParam = 8;

// Bytes per parameter a data-parallel parameter all-gather moves (the distributed optimizer's
// gather after the step, ZeRO-3's before each pass): the bf16 parameters.
inline constexpr double kStepParameterBytes = 2;

// Bytes per gradient element a GPU keeps (the main-gradient buffer) and data-parallel reduces:
// 4 in fp32, else 2 (bf16, or fp16 for fp16 plans); grad_reduce_in_fp32_in_force (plan.h) says
// which.
inline double gradient_bytes_per_param(const Plan& plan) {
  return grad_reduce_in_fp32_in_force(plan) ? kGradientBytesPerParam : kHalfGradientBytesPerParam;
}

// Parameters one GPU holds, split by the data-parallel group that reduces their gradients and
// shards their optimizer states: dense ones over dp*cp, routed experts over Plan::expert_dp.
struct ParameterSplit {
  double dense = 0;   // Already split by tp (and replicated parts).
  double expert = 0;  // Routed experts, already split by ep*etp.
  double total() const { return dense + expert; }
  ParameterSplit& operator+=(const ParameterSplit& other) {
    dense += other.dense;
    expert += other.expert;
    return *this;
  }
};

// One GPU's share of `parameters` when ZeRO shards them: dense over dp*cp, routed experts over
// the expert data-parallel group.
inline double sharded_parameters(const ParameterSplit& parameters, const Plan& plan) {
  return parameters.dense / static_cast<double>(plan.dp * plan.cp) +
         parameters.expert / static_cast<double>(plan.expert_dp());
}

// The parameters a GPU updates: its distributed-optimizer shard under ZeRO >= 1, all of them
// otherwise.
inline double updated_parameters(const ParameterSplit& parameters, const Plan& plan) {
  return zero_stage_in_force(plan) >= 1 ? sharded_parameters(parameters, plan)
                                        : parameters.total();
}

}  // namespace ppsim
