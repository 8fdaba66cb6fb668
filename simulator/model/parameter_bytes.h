// Bytes a GPU keeps per model parameter under mixed-precision Adam, by part: the one table that
// the memory model, optimizer offload, the step builder's gradient traffic and the exporters read.
#pragma once

#include "simulator/spec/plan.h"

namespace ppsim {

// Bytes per parameter of mixed-precision Adam, by part (memory_model.h explains
// the sum and how ZeRO shards each part).
inline constexpr double kWeightBytesPerParam = 2;        // bf16/fp16 (also fp8 plans).
inline constexpr double kGradientBytesPerParam = 4;      // fp32 main gradients (bf16, fp8 plans).
inline constexpr double kFp16GradientBytesPerParam = 2;  // fp16 main gradients (fp16 plans).
inline constexpr double kOptimizerBytesPerParam = 12;    // fp32 master weights + Adam m, v.
// PyTorch FSDP under a bf16 mixed-precision policy (runtime.h fsdp_fp32_shards): the sharded
// parameters are fp32 and double as the master copy, so the optimizer adds only Adam's m and v.
inline constexpr double kFsdpShardBytesPerParam = 4;
inline constexpr double kAdamMomentsBytesPerParam = 8;

// Bytes per parameter a data-parallel parameter all-gather moves (the distributed optimizer's
// gather after the step, ZeRO-3's before each pass): the bf16 parameters.
inline constexpr double kStepParameterBytes = 2;

// Bytes per gradient element a GPU keeps and data-parallel reduces. Megatron-LM forces fp32
// accumulation and all-reduce for bf16 (arguments.py: "bfloat16 requires gradient accumulation
// and all-reduce to be done in fp32"), while fp16 keeps main_grad in the parameters' dtype
// unless --accumulate-allreduce-grads-in-fp32 is given (DistributedDataParallel's grad_dtype).
// fp8 plans keep bf16 parameters, so fp32 gradients.
inline double gradient_bytes_per_param(Precision precision) {
  return precision == Precision::kFp16 ? kFp16GradientBytesPerParam : kGradientBytesPerParam;
}

}  // namespace ppsim
