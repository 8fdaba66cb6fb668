// What the three launcher exporters share: the output type, comment wrapping, the launch
// shape torchrun needs (with the warnings no launcher can state), and small text helpers.
// Each exporter is one file beside this one (megatron_export.h, deepspeed_export.h,
// torchtitan_export.h); launcher_config.h names the formats and dispatches to them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

enum class LauncherFormat { kMegatron, kDeepSpeed, kTorchTitan };

// The file name a launcher file gets inside an output folder (`plan --emit FORMAT --out DIR`):
// "megatron_launch.sh", "ds_config.json" or "torchtitan_job.toml".
std::string launcher_file_name(LauncherFormat format);

// One generated launcher file.
struct LauncherOutput {
  std::string text;                   // The whole file, ending in a newline.
  std::vector<std::string> warnings;  // What the launcher cannot express, one sentence each,
                                      // in a fixed order; also written as comments in `text`
                                      // (but for DeepSpeed's JSON, which takes no comments).
  // What the file cannot hold: for DeepSpeed, the launch line, the batch arithmetic and what
  // the training script sets (`ppsim export` prints them on stderr as "ppsim: note: ...").
  std::vector<std::string> notes;
};

// Width of generated comment lines and wrapped arrays, in characters.
inline constexpr size_t kCommentWidth = 100;

// `text` as comment lines of at most kCommentWidth characters: the first line starts with
// `first`, the others with `next`. Words longer than a line stay whole.
std::string wrap_comment(const std::string& text, const std::string& first,
                         const std::string& next);

// Microbatches per data-parallel rank as the launchers compute them: the global batch split
// equally over dp (none of them takes per-replica shares; launch_shape warns when the plan has).
int64_t launcher_microbatches(const Plan& plan);

// The values joined by `separator` ("1:2:3").
std::string join_ints(const std::vector<int64_t>& values, const std::string& separator);

// "4 nodes x 8 H100-SXM-80GB" (groups joined with " + ").
std::string cluster_summary(const ClusterSpec& cluster);
// "80 layers, hidden 8192, 64 heads, 8 kv heads" (and experts when MoE).
std::string model_summary(const ModelSpec& model);

// How many processes torchrun starts on how many nodes.
struct Launch {
  int64_t world = 0;          // GPUs the plan uses: tp * pp * dp * cp.
  int64_t gpus_per_node = 0;  // --nproc_per_node.
  int64_t nodes = 0;          // --nnodes.
};

// The launch shape, plus warnings for what no launcher states: unequal nodes, a partial last
// node, stages pinned to node groups or GPU types. Every launcher here orders ranks with the
// pipeline stage outermost (Megatron "tp-cp-ep-dp-pp", torchtitan mesh ["pp", ...], DeepSpeed
// axes ["pipe", "data", "model"]), so node order decides which stage runs where. `launcher`
// names it in the warnings ("Megatron-LM").
Launch launch_shape(const ClusterSpec& cluster, const Plan& plan, const std::string& launcher,
                    std::vector<std::string>& warnings);

// True when every value equals the first (and for an empty list).
bool all_equal(const std::vector<int64_t>& values);

}  // namespace ppsim
