#include "simulator/spec/schedule_kind.h"

#include <fmt/format.h>

#include <algorithm>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// One row per schedule, in ScheduleKind order (checked at first use).
constexpr ScheduleTraits kScheduleTable[] = {
    // kind, name, placement, splits_backward, releases_at_input_grad, searched_by_default,
    // min_microbatches_per_rank, megatron_native, deepspeed_native, torch_class
    {ScheduleKind::kGpipe, "gpipe", ChunkPlacement::kOnePerRank, false, false, true, 0, false,
     false, "GPipe"},
    {ScheduleKind::kOneFOneB, "1f1b", ChunkPlacement::kOnePerRank, false, false, true, 0, true,
     true, "1F1B"},
    {ScheduleKind::kInterleaved1F1B, "interleaved-1f1b", ChunkPlacement::kLoop, false, false, true,
     0, true, false, "Interleaved1F1B"},
    {ScheduleKind::kZbH1, "zb-h1", ChunkPlacement::kOnePerRank, true, true, true, 0, false, false,
     "InterleavedZeroBubble"},
    {ScheduleKind::kZbH2, "zb-h2", ChunkPlacement::kOnePerRank, true, true, true, 0, false, false,
     "InterleavedZeroBubble"},
    {ScheduleKind::kZb1p, "zb-1p", ChunkPlacement::kOnePerRank, true, true, false, 0, false, false,
     "InterleavedZeroBubble"},
    {ScheduleKind::kZb2p, "zb-2p", ChunkPlacement::kOnePerRank, true, true, false, 0, false, false,
     "InterleavedZeroBubble"},
    {ScheduleKind::kZbv, "zbv", ChunkPlacement::kV, true, false, true, 0, false, false,
     "ZBVZeroBubble"},
    {ScheduleKind::kDualPipeV, "dualpipev", ChunkPlacement::kV, true, false, true, 2, false, false,
     "DualPipeV"},
};

}  // namespace

const ScheduleTraits& schedule_traits(ScheduleKind kind) {
  const size_t index = static_cast<size_t>(kind);
  PPSIM_CHECK(index < std::size(kScheduleTable) && kScheduleTable[index].kind == kind,
              "kScheduleTable rows follow ScheduleKind's order");
  return kScheduleTable[index];
}

const std::vector<ScheduleKind>& all_schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = [] {
    std::vector<ScheduleKind> list;
    for (const ScheduleTraits& row : kScheduleTable) list.push_back(row.kind);
    return list;
  }();
  return kinds;
}

std::vector<ScheduleKind> default_search_schedules() {
  std::vector<ScheduleKind> kinds;
  for (const ScheduleTraits& row : kScheduleTable) {
    if (row.searched_by_default) kinds.push_back(row.kind);
  }
  return kinds;
}

std::string schedule_name(ScheduleKind kind) { return schedule_traits(kind).name; }

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const ScheduleTraits& row : kScheduleTable) list.push_back(row.name);
    return list;
  }();
  return names;
}

std::optional<ScheduleKind> find_schedule(const std::string& name) {
  for (const ScheduleTraits& row : kScheduleTable) {
    if (name == row.name) return row.kind;
  }
  return std::nullopt;
}

ScheduleKind parse_schedule_name(const std::string& name, const std::string& source) {
  if (std::optional<ScheduleKind> kind = find_schedule(name)) return *kind;
  throw InputError(source, "",
                   fmt::format("unknown schedule '{}'; expected one of {}{}", name,
                               join_names(schedule_names()), did_you_mean(name, schedule_names())));
}

bool is_v_shaped(ScheduleKind kind) {
  return schedule_traits(kind).placement == ChunkPlacement::kV;
}

bool is_interleaved(ScheduleKind kind) {
  return schedule_traits(kind).placement == ChunkPlacement::kLoop;
}

int64_t default_chunks_per_rank(ScheduleKind kind) { return is_v_shaped(kind) ? 2 : 1; }

int64_t chunks_per_rank(ScheduleKind kind, int64_t vpp) {
  switch (schedule_traits(kind).placement) {
    case ChunkPlacement::kV:
      return 2;
    case ChunkPlacement::kLoop:
      return vpp;
    case ChunkPlacement::kOnePerRank:
      return 1;
  }
  PPSIM_CHECK(false, "unknown chunk placement");
}

std::vector<int64_t> chunk_count_options(ScheduleKind kind, int64_t layers, int64_t pp,
                                         int64_t max_vpp) {
  if (!is_interleaved(kind)) return {chunks_per_rank(kind, 1)};
  std::vector<int64_t> options;
  for (int64_t v = 2; v <= max_vpp; ++v) {
    if (v * std::max<int64_t>(pp - 2, 1) <= layers) options.push_back(v);
  }
  return options;
}

int64_t rank_of_chunk(ScheduleKind kind, int64_t pp, int64_t chunks_per_rank, int64_t chunk) {
  PPSIM_CHECK(chunk >= 0 && chunk < pp * chunks_per_rank);
  if (is_v_shaped(kind)) return chunk < pp ? chunk : 2 * pp - 1 - chunk;
  return chunk % pp;
}

int64_t local_index_of_chunk(ScheduleKind kind, int64_t pp, int64_t chunks_per_rank,
                             int64_t chunk) {
  PPSIM_CHECK(chunk >= 0 && chunk < pp * chunks_per_rank);
  return chunk / pp;  // Loop and V placements alike: the k-th pass over the ranks.
}

int64_t loss_rank(ScheduleKind kind, int64_t pp) { return is_v_shaped(kind) ? 0 : pp - 1; }

int64_t microbatch_unit(ScheduleKind kind, int64_t pp, int64_t vpp) {
  return is_interleaved(kind) && vpp > 1 ? pp : 1;
}

int64_t min_microbatches(ScheduleKind kind, int64_t pp, int64_t vpp) {
  const int32_t per_rank = schedule_traits(kind).min_microbatches_per_rank;
  return per_rank > 0 ? per_rank * pp : microbatch_unit(kind, pp, vpp);
}

std::optional<int32_t> smallest_microbatch_group(int32_t ranks, int32_t microbatches) {
  for (int32_t group = ranks; group <= microbatches; ++group) {
    if (!schedule_problem(ScheduleKind::kInterleaved1F1B, ranks, microbatches, 2, group)) {
      return group;
    }
  }
  return std::nullopt;
}

std::optional<std::string> schedule_problem(ScheduleKind kind, int32_t ranks, int32_t microbatches,
                                            int32_t chunks_per_rank, int32_t microbatch_group) {
  const std::string name = schedule_name(kind);
  if (ranks < 1 || microbatches < 1 || chunks_per_rank < 1) {
    return fmt::format("{} needs pp, microbatches and vpp >= 1; got pp={}, m={}, vpp={}", name,
                       ranks, microbatches, chunks_per_rank);
  }
  if (is_v_shaped(kind) && chunks_per_rank != 2) {
    return fmt::format("{} holds exactly 2 chunks per rank; got vpp={}", name, chunks_per_rank);
  }
  if (!is_interleaved(kind) && !is_v_shaped(kind) && chunks_per_rank != 1) {
    return fmt::format("{} holds one chunk per rank; got vpp={} (use interleaved-1f1b)", name,
                       chunks_per_rank);
  }
  if (is_interleaved(kind) && chunks_per_rank > 1) {
    // Megatron: interleaving needs pp > 1; microbatches run in groups of g (default pp), and
    // a last group shorter than pp is refused (with g = pp it deadlocks the warm-up count).
    if (ranks < 2) return fmt::format("{} with vpp={} needs pp >= 2", name, chunks_per_rank);
    if (microbatch_group == 0 || microbatch_group == ranks) {
      if (microbatches % ranks != 0) {
        return fmt::format(
            "{} needs the microbatches per step to be a multiple of pp={}; got {} (Megatron runs "
            "them in groups of pp; a larger microbatch_group_size_per_vp_stage allows others)",
            name, ranks, microbatches);
      }
    } else if (microbatch_group < ranks || microbatch_group > microbatches) {
      return fmt::format(
          "{} runs microbatch groups of pp={} to the {} microbatches per step; "
          "microbatch_group_size_per_vp_stage={} is outside",
          name, ranks, microbatches, microbatch_group);
    } else if (const int32_t last = microbatches % microbatch_group; last > 0 && last < ranks) {
      return fmt::format(
          "{}: {} microbatches in groups of {} leave a last group of {}, fewer than pp={} "
          "(Megatron refuses it for the dependency bubbles it leaves); make the microbatches a "
          "multiple of the group or leave at least pp over",
          name, microbatches, microbatch_group, last, ranks);
    }
  }
  const int32_t per_rank = schedule_traits(kind).min_microbatches_per_rank;
  if (per_rank > 0 && microbatches < per_rank * ranks) {
    return fmt::format("{} needs at least {}*pp = {} microbatches; got {}", name, per_rank,
                       per_rank * ranks, microbatches);
  }
  return std::nullopt;
}

}  // namespace ppsim
