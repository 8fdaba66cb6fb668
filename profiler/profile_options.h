// ProfileOptions: what `ppsim profile` measures and how, shared by the CPU and CUDA backends.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/benchmark_shapes.h"

namespace ppsim {

struct ProfileOptions {
  // A reduced shape and size set: a few seconds on the CPU backend, about a minute on a GPU.
  bool quick = false;
  // Untimed calls before each measured point (nccl-tests -w). Default: 2 quick, 5 full.
  int64_t warmup_iters = 5;
  // Timed calls per point; the median is kept (nccl-tests -n). Default: 5 quick, 20 full.
  int64_t iters = 20;
  // Seconds any one collective may take before its communicator is aborted and the ranks
  // still waiting are named (nccl-tests -T). Default 60.
  double collective_timeout = 60;
  // Shapes measured besides the backend's own set (`ppsim profile --model`): one model's GEMMs
  // and attention calls, so a plan of that model looks up measured shapes, not interpolations.
  std::vector<BenchGemm> extra_gemms;
  std::vector<BenchAttention> extra_attention;
};

}  // namespace ppsim
