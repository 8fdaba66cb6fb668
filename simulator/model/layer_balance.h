// Layer balance: how many transformer layers each pipeline stage gets.
//
// Three kinds of split, each a vector of pp layer counts (Plan::stage_layers):
// - balanced: as even as possible in units of `granularity` layers (the chunks per rank, since
//   every stage's count must divide into its chunks); the remainder goes to the middle stages
//   first, then the last, then the first (stage_layer_counts()'s rule), because the first and last
//   stages also carry the embedding and the loss;
// - trimmed: a base split with `trim_first` units moved off the first stage and `trim_last` off
//   the last, each moved unit going to the stage with the fewest layers among the others (lowest
//   index on ties) -- the "one or two layers fewer at the ends" of Llama 3 and Megatron's
//   --decoder-first/last-pipeline-num-layers;
// - time-balanced: the split that minimises the slowest stage's time, given each stage's seconds
//   per layer (its GPU type's) and a fixed extra per stage (embedding, head). Metis and AdaPipe
//   balance stages by dynamic programming over layers; with per-layer costs that are
//   non-negative, the minimal bottleneck T* is found by bisection on T with a greedy feasibility
//   test (each stage in order takes as many layers as fit under T, leaving at least
//   `min_units` units for every later stage), which is exact for contiguous splits and costs
//   O((stages + layers) log) instead of the DP's O(stages x layers^2).
//   Memory: a stage may also cap its layers (StageTimeModel::max_layers, what its GPU memory
//   holds); the greedy then takes at most that many, which keeps it exact (taking the most a
//   stage allows under T and its cap never hurts later stages), so the split minimises the
//   bottleneck among the splits every stage's memory holds.
// - chunked: the planner's base split for `granularity` chunks per stage. The balanced split
//   where the layers come in whole units; otherwise uneven ends, lighter first and last stages
//   (e.g. Llama 3.1 405B's 126 layers on 16 stages of 8 chunks: 7, 8 x 14, 7): the middle
//   stages k units each, k the least that leaves the ends no more than a middle stage, and the
//   two ends the rest, the last the larger half; only as balanced as whole units would be, each
//   end within one unit of a middle stage (so not 2, 14, 14, 2 for 32 layers on 4 stages at 7
//   chunks). A stage whose layers do not fill its chunks evenly spreads them as chunk_layout.h
//   does. Megatron runs such splits with --pipeline-model-parallel-layout, which the exporter
//   writes: its --decoder-first/last-pipeline-num-layers need counts divisible by the chunks.
// Every split returned but a chunked one with uneven ends has each stage a multiple of
// `granularity` and at least `min_units` units.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ppsim {

// REQUIRES: stages >= 1, granularity >= 1. nullopt when layers is not a multiple of granularity
// or there are fewer units than stages.
std::optional<std::vector<int64_t>> balanced_split(int64_t layers, int64_t stages,
                                                   int64_t granularity);

// REQUIRES: stages >= 1, granularity >= 1. nullopt when neither fits: the balanced split needs
// whole units and at least one per stage; the uneven ends need stages >= 2, a unit for every
// middle stage, a layer for each end and each end within one unit of a middle stage.
std::optional<std::vector<int64_t>> chunked_split(int64_t layers, int64_t stages,
                                                  int64_t granularity);

// REQUIRES: base.size() >= 2 and every base entry a multiple of granularity. nullopt when an end
// stage would drop below `min_units` units.
std::optional<std::vector<int64_t>> trimmed_split(const std::vector<int64_t>& base,
                                                  int64_t trim_first, int64_t trim_last,
                                                  int64_t granularity, int64_t min_units = 1);

// What one stage costs: seconds of layers [a, b) = layer_prefix[b] - layer_prefix[a], plus extra.
struct StageTimeModel {
  std::vector<double> layer_prefix;  // Size layers + 1, non-decreasing, layer_prefix[0] = 0.
  double extra_seconds = 0;          // Embedding and/or head on this stage.
  int64_t max_layers = INT64_MAX;    // The most layers this stage's memory holds; default no cap.
};

// The contiguous split of `layers` over stages.size() stages minimising max stage time within
// every stage's max_layers; nullopt when the caps leave no split.
// REQUIRES: layers % granularity == 0, layers / granularity >= stages.size() * min_units.
std::optional<std::vector<int64_t>> time_balanced_split(const std::vector<StageTimeModel>& stages,
                                                        int64_t layers, int64_t granularity,
                                                        int64_t min_units = 1);

// The slowest stage's time of a split under `stages`.
double bottleneck_seconds(const std::vector<StageTimeModel>& stages,
                          const std::vector<int64_t>& split);

}  // namespace ppsim
