// ScheduleKind: the pipeline schedules ppsim runs, with their names, traits and the rules a plan
// must meet to run one. This is the one place a schedule's properties live: the builders
// (schedule/), the chunk layout and memory model (model/), the planner, the exporters and the
// reader of published runs ask these functions instead of naming kinds.
//
// Adding a schedule touches this file pair (an enum value and one row of kScheduleTable in
// schedule_kind.cc) and schedule/ (its builder, one file, and one case in
// build_pipeline_schedule's dispatch); everything else follows the traits.
//
// Traits, per kind (schedule/pipeline_schedule.h describes each order):
//   name                   gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2, zb-1p, zb-2p, zbv,
//                          dualpipev
//   placement              one chunk per rank; loop (interleaved-1f1b: chunk c on rank c % p);
//                          V (zbv, dualpipev: two chunks per rank, rank r holds r and 2p-1-r)
//   splits_backward        the backward runs as I (input gradient) and W (weight gradient):
//                          every zb-*, zbv, dualpipev
//   releases_at_input_grad the analytic memory model frees a microbatch's activations at I
//                          rather than W (the Zero Bubble paper's accounting, where only W's
//                          small weight-gradient state waits): zb-h1, zb-h2, zb-1p, zb-2p
//   searched_by_default    the planner tries it without --schedule (zb-1p/zb-2p equal zb-h1/
//                          zb-h2 under the unit costs the planner's search would show)
//   min_microbatches_per_rank  m >= this * p (dualpipev: 2, torch ScheduleDualPipeV); 0 = none
//   megatron_native, deepspeed_native, torch_class  what each launcher runs (export/)
// Rules on (p, m, v), schedule_problem(): p, m, v >= 1; V schedules hold exactly v = 2;
// one-chunk schedules v = 1; interleaved-1f1b with v > 1 needs p >= 2 and runs microbatches in
// groups of g (Megatron's microbatch_group_size_per_vp_stage, default p): p <= g <= m, and the
// last group m % g is 0 or at least p (Megatron's forward_backward_pipelining_with_interleaving
// refuses a shorter one), so with g = p, m % p == 0; dualpipev m >= 2p.
//
// Thread-safety: pure functions over a constant table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppsim {

enum class ScheduleKind {
  kGpipe,
  kOneFOneB,
  kInterleaved1F1B,
  kZbH1,
  kZbH2,
  kZb1p,  // The Zero Bubble paper's searched schedule under a p*M_B activation limit.
  kZb2p,  // The same under 2p*M_B.
  kZbv,
  kDualPipeV
};

// The schedule a plan runs when it names none (and the one a single-stage plan is written
// with: without a pipeline every schedule runs the same).
inline constexpr ScheduleKind kDefaultSchedule = ScheduleKind::kOneFOneB;

// Where a schedule puts the model's chunks ("virtual stages", 0 .. p*v-1 in forward order).
enum class ChunkPlacement : uint8_t {
  kOnePerRank,  // v = 1: chunk r on rank r.
  kLoop,        // Interleaved (Megatron's virtual pipeline): chunk c on rank c % p.
  kV,           // v = 2: chunk c on rank c for c < p, on rank 2p-1-c otherwise.
};

// A schedule's fixed properties (header above).
struct ScheduleTraits {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  const char* name = "";  // Canonical name in JSON, flags and reports.
  ChunkPlacement placement = ChunkPlacement::kOnePerRank;
  bool splits_backward = false;           // Backward as I + W.
  bool releases_at_input_grad = false;    // Analytic memory frees activations at I, not W.
  bool searched_by_default = true;        // In the planner's default schedule list.
  int32_t min_microbatches_per_rank = 0;  // m >= this * p; 0 = no such rule.
  // How launchers run it (the exporters' mapping, export/):
  bool megatron_native = false;   // Megatron-LM has this schedule (1f1b, interleaved-1f1b).
  bool deepspeed_native = false;  // DeepSpeed's pipeline engine has it (its 1F1B TrainSchedule).
  const char* torch_class = "";   // torch.distributed.pipelining schedule that runs it
                                  // (get_schedule_class name; the nearest one where torch lacks
                                  // the exact schedule: zb-h2/zb-2p run as InterleavedZeroBubble).
};

// The traits of `kind`.
const ScheduleTraits& schedule_traits(ScheduleKind kind);

// Every schedule, in the order names are listed ("gpipe", "1f1b", ...).
const std::vector<ScheduleKind>& all_schedule_kinds();
// The schedules the planner tries by default (searched_by_default), in that order.
std::vector<ScheduleKind> default_search_schedules();

// Canonical names used in JSON, flags and reports.
std::string schedule_name(ScheduleKind kind);
const std::vector<std::string>& schedule_names();
// The kind named `name` exactly, or nullopt.
std::optional<ScheduleKind> find_schedule(const std::string& name);

// The schedule named `name` ("1f1b", "zb-h2", ...). Throws InputError naming `source` with the
// valid names and a "did you mean" when the name is unknown.
ScheduleKind parse_schedule_name(const std::string& name, const std::string& source);

// True for the V-placed schedules (zbv, dualpipev), which hold exactly two chunks per rank.
bool is_v_shaped(ScheduleKind kind);
// True when the schedule interleaves a plan-chosen number of chunks (interleaved-1f1b).
bool is_interleaved(ScheduleKind kind);
// The vpp a plan gets when it names none: 2 for V schedules, else 1.
int64_t default_chunks_per_rank(ScheduleKind kind);
// Model chunks per rank as the schedule runs them: 2 for V schedules, vpp for interleaved-1f1b
// (vpp == 1 is plain 1F1B), else 1.
int64_t chunks_per_rank(ScheduleKind kind, int64_t vpp);
// The chunk counts per rank worth trying for a model of `layers` layers on `pp` stages, with at
// most `max_vpp` chunks: interleaved-1f1b every v in [2, max_vpp] with a layer per chunk on the
// middle stages (v * max(pp - 2, 1) <= layers; whether the layers split over the stages is
// layer_balance.h chunked_split's to say); V schedules 2; else 1.
std::vector<int64_t> chunk_count_options(ScheduleKind kind, int64_t layers, int64_t pp,
                                         int64_t max_vpp);
// The rank holding chunk `chunk` of p*v under the schedule's placement. REQUIRES: 0 <= chunk < p*v.
int64_t rank_of_chunk(ScheduleKind kind, int64_t pp, int64_t chunks_per_rank, int64_t chunk);
// The index on its rank of chunk `chunk` (0 for the first chunk a rank holds in forward order).
int64_t local_index_of_chunk(ScheduleKind kind, int64_t pp, int64_t chunks_per_rank, int64_t chunk);
// The rank whose chunk holds the output layer and the loss (the last chunk): p - 1, or 0 for V
// schedules.
int64_t loss_rank(ScheduleKind kind, int64_t pp);

// Microbatch counts a replica may run: a multiple of `microbatch_unit` (pp for interleaved-1f1b
// with vpp > 1, else 1) and at least `min_microbatches` (2*pp for dualpipev, else the unit).
int64_t microbatch_unit(ScheduleKind kind, int64_t pp, int64_t vpp);
int64_t min_microbatches(ScheduleKind kind, int64_t pp, int64_t vpp);

// Why the schedule cannot run (p ranks, m microbatches, v chunks per rank, interleaved groups
// of `microbatch_group`, 0 = p), or nullopt; the rules are in the header above. Messages name
// the schedule and the numbers.
std::optional<std::string> schedule_problem(ScheduleKind kind, int32_t ranks, int32_t microbatches,
                                            int32_t chunks_per_rank, int32_t microbatch_group = 0);

// The smallest microbatch group in which interleaved-1f1b runs `microbatches` on `ranks`
// (schedule_problem's rules: pp itself when it divides them, else the smallest g above it whose
// last group is 0 or at least pp), or nullopt when none does (fewer microbatches than pp). The
// smallest keeps the fewest microbatches in flight; the planner gives it to interleaved plans
// whose count pp does not divide.
std::optional<int32_t> smallest_microbatch_group(int32_t ranks, int32_t microbatches);

}  // namespace ppsim
