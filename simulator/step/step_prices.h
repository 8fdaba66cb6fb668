// StepPrices: the chunk prices of one step's workers, one per (node group, chunk) from
// ChunkPricer (chunk_price.h) with that group's GPU type's CostModel, and the tally of where
// the step's costs came from (roofline or profile; CostProvenance).
//
// Passes are tallied once per (GPU type, chunk); collectives each time a chunk is priced for a
// node group, and for every transfer or collective the step builder prices outside chunks
// (count_comm).
//
// Not thread-safe: one per build_step.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "simulator/cost/chunk_price.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/step/step.h"

namespace ppsim {

class StepPrices {
 public:
  // REQUIRES: step's layout and layout_worker are set; the references outlive this.
  StepPrices(const ModelSpec& model, const ClusterSpec& cluster, const Plan& plan,
             const StepOptions& options, const Step& step);

  // The price of `chunk` on lowered worker `worker`'s GPUs (made on first use).
  const ChunkPrice& of(int32_t worker, int32_t chunk);
  // Parameters per GPU of lowered worker `worker`: its chunks' sum (gradient sync, optimizer).
  ParameterSplit worker_parameters(int32_t worker);
  // Tallies a collective or transfer priced outside the chunks (its seconds > 0 only).
  void count_comm(const PassCost& cost);

  const ChunkPricer& pricer() const { return pricer_; }
  const CostProvenance& provenance() const { return provenance_; }

 private:
  ChunkPrice price(int32_t group_index, int32_t chunk);
  void add_comm(const CommCounts& comm);

  const ClusterSpec& cluster_;
  const StepOptions& options_;
  const Step& step_;
  ChunkPricer pricer_;
  ChunkLayout layout_;
  std::map<std::string, CostModel> cost_models_;              // Per GPU type.
  std::map<std::pair<int32_t, int32_t>, ChunkPrice> prices_;  // Per (node group, chunk).
  std::map<int32_t, LayerPriceMemo> layer_prices_;             // Per node group.
  std::set<std::pair<std::string, int32_t>> counted_;         // (GPU type, chunk) passes tallied.
  CostProvenance provenance_;
};

}  // namespace ppsim
