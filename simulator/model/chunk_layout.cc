#include "simulator/model/chunk_layout.h"

#include "simulator/spec/error.h"

namespace ppsim {

std::vector<int64_t> ChunkLayout::rank_chunks(int64_t rank) const {
  std::vector<int64_t> chunks(chunks_per_rank, -1);
  for (int64_t c = 0; c < num_chunks(); ++c) {
    if (chunk_rank[c] == rank) chunks[chunk_local_index[c]] = c;
  }
  return chunks;
}

ChunkLayout chunk_layout(const Plan& plan, const ModelSpec& model) {
  ChunkLayout layout;
  layout.ranks = plan.pp;
  layout.chunks_per_rank = chunks_per_rank(plan.schedule, plan.vpp);
  const int64_t v = layout.chunks_per_rank;
  // A pipeline layout gives every chunk's layers (plan_problem checked it fits p x v), parsed
  // once here for the chunks and the ranks' sums.
  std::vector<LayoutStage> given;
  if (!plan.pipeline_layout.empty()) given = pipeline_layout_stages(plan);
  PPSIM_CHECK(given.empty() || static_cast<int64_t>(given.size()) == plan.pp * v,
              "one layout stage per chunk");
  layout.stage_layers =
      given.empty() ? stage_layer_counts(plan, model) : rank_decoder_layers(given, plan.pp);
  PPSIM_CHECK(static_cast<int64_t>(layout.stage_layers.size()) == plan.pp,
              "one layer count per stage");
  int64_t first = 0;
  for (int64_t c = 0; c < plan.pp * v; ++c) {
    const int64_t rank = rank_of_chunk(plan.schedule, plan.pp, v, c);
    const int64_t local = local_index_of_chunk(plan.schedule, plan.pp, v, c);
    // As even as it goes: the rank's first (layers % v) chunks take one more.
    const int64_t count =
        !given.empty() ? given[c].decoder_layers
                       : layout.stage_layers[rank] / v + (local < layout.stage_layers[rank] % v);
    layout.chunk_rank.push_back(rank);
    layout.chunk_local_index.push_back(local);
    layout.chunk_first_layer.push_back(first);
    layout.chunk_layers.push_back(count);
    first += count;
  }
  PPSIM_CHECK(first == model.num_layers, "stage layers add up to the model's");
  return layout;
}

}  // namespace ppsim
