// ChunkLayout: where a plan's model chunks run and which layers each holds.
//
// A chunk ("virtual stage") is a contiguous run of transformer layers; the p*v chunks number the
// model in forward order. The schedule's placement (spec/schedule_kind.h) puts each chunk on a
// rank: one chunk per rank, loop (interleaved-1f1b: chunk c on rank c % p) or V (zbv, dualpipev:
// rank r holds chunks r and 2p-1-r). The plan's pipeline_layout, when given, sets every chunk's
// layers (chunk c is the layout's virtual stage c). Otherwise a rank's layers
// (stage_layer_counts: the plan's stage_layers or the balanced split) are divided as evenly as
// they go over its chunks: the rank's first (layers % v) chunks in its local order hold one
// layer more (Megatron's pipeline layouts, e.g. DeepSeek-V3's 61 layers on pp 8 x vpp 4). Each
// chunk starts where chunk c-1 ended. The embedding runs in chunk 0 (on rank 0) and the output
// layer, the loss and any MTP layers in the last chunk (rank p-1, or rank 0 for V schedules).
//
// The one derivation of this layout: the memory model, the step builder, the planner's screen,
// the executor's step programs and the exporters all read it from here.
//
// Invariants: chunk_first_layer[0] == 0; chunk_first_layer[c+1] == chunk_first_layer[c] +
// chunk_layers[c]; the layers add up to the model's.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

struct ChunkLayout {
  int64_t ranks = 1;                  // p, pipeline ranks.
  int64_t chunks_per_rank = 1;        // v, as the schedule runs it (chunks_per_rank(kind, vpp)).
  std::vector<int64_t> stage_layers;  // Layers per rank (p entries).
  std::vector<int64_t> chunk_rank;    // Chunk -> the rank that runs it (p*v entries).
  std::vector<int64_t> chunk_local_index;  // Chunk -> its index among its rank's chunks, in the
                                           // rank's forward order (0 .. v-1).
  std::vector<int64_t> chunk_first_layer;  // Chunk -> its first layer's global index.
  std::vector<int64_t> chunk_layers;       // Chunk -> how many layers it holds.

  int64_t num_chunks() const { return static_cast<int64_t>(chunk_rank.size()); }
  // The last chunk, holding the output layer and the loss, and its rank.
  int64_t loss_chunk() const { return num_chunks() - 1; }
  int64_t loss_rank() const { return chunk_rank.back(); }
  // The chunks of `rank` in local order (chunk_local_index 0, 1, ...).
  std::vector<int64_t> rank_chunks(int64_t rank) const;
};

// The layout of `plan` for `model`. REQUIRES: stage_layer_counts(plan, model) is valid
// (plan_problem checks it).
ChunkLayout chunk_layout(const Plan& plan, const ModelSpec& model);

}  // namespace ppsim
