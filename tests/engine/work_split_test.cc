// WorkSplit (work_split.h) without MPI: P threads stand for P processes, each with its own
// split object over one shared board, and each runs the same Monte-Carlo, sensitivity or plan
// search. Every "process" must end with what one process computes, bit for bit: the merge in
// index order is what the mpirun test (tests/tools/cli_work_split_mpi_test.cc) relies on.
#include "simulator/engine/work_split.h"

#include <barrier>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "simulator/planner/planner.h"
#include "simulator/spec/model_file.h"
#include "simulator/step/monte_carlo.h"
#include "simulator/step/sensitivity.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// The bytes every process posted in the current exchange, by process then index.
struct Board {
  explicit Board(int processes) : posted(processes), sync(processes) {}
  std::vector<std::map<int64_t, std::string>> posted;
  std::barrier<> sync;
};

// Process `me` of `board`'s processes: posts its indices' bytes, waits for everyone, decodes the
// others' in index order, and waits again before the board is reused.
class ThreadSplit final : public WorkSplit {
 public:
  ThreadSplit(Board& board, int me) : board_(board), me_(me) {}
  int processes() const override { return static_cast<int>(board_.posted.size()); }
  int process() const override { return me_; }
  void exchange(int64_t count, const std::function<std::string(int64_t)>& encode,
                const std::function<void(int64_t, std::string_view)>& decode) const override {
    std::map<int64_t, std::string>& mine = board_.posted[me_];
    mine.clear();
    for (int64_t i = me_; i < count; i += processes()) mine[i] = encode(i);
    board_.sync.arrive_and_wait();
    for (int64_t i = 0; i < count; ++i) {
      int owner = static_cast<int>(i % processes());
      if (owner != me_) decode(i, board_.posted[owner].at(i));
    }
    board_.sync.arrive_and_wait();
  }

 private:
  Board& board_;
  int me_;
};

// run(split) on `processes` threads, each with its own split; the results by process.
template <typename Result>
std::vector<Result> on_processes(int processes,
                                 const std::function<Result(const WorkSplit*)>& run) {
  Board board(processes);
  std::vector<ThreadSplit> splits;
  for (int p = 0; p < processes; ++p) splits.emplace_back(board, p);
  std::vector<Result> results(processes);
  std::vector<std::thread> threads;
  for (int p = 0; p < processes; ++p) {
    threads.emplace_back([&, p] { results[p] = run(&splits[p]); });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

TEST_CASE("WorkSplit: run_split runs each index once, on its owner, and merges in index order") {
  for (int processes : {1, 2, 3, 5}) {
    auto results = on_processes<std::vector<int64_t>>(processes, [](const WorkSplit* split) {
      std::vector<int64_t> values(11, -1);
      ThreadPool pool(2);
      run_split(
          split, pool, 11,
          [&](int64_t i) { values[i] = split->owns(i) ? i * i : -2; },  // -2: not its owner.
          [&](int64_t i) { return value_bytes(values[i]); },
          [&](int64_t i, std::string_view bytes) { values[i] = bytes_value<int64_t>(bytes); });
      return values;
    });
    for (const std::vector<int64_t>& values : results) {
      for (int64_t i = 0; i < 11; ++i) CHECK(values[i] == i * i);
    }
  }
}

TEST_CASE("WorkSplit: Monte-Carlo on 1 and 3 processes gives the same step times and costs") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StragglerModel model;
  model.stragglers.push_back(parse_straggler_flag("gpu=3:0.8"));
  model.stragglers.push_back(parse_straggler_flag("link=0-1:0.5"));
  model.jitter = parse_jitter_flag("lognormal:0.05");
  validate_straggler_model(model, cluster);
  Plan plan = parse_plan("tp=4,pp=2,dp=4,mbs=1,gbs=16,schedule=1f1b", "test");
  MonteCarloOptions options;
  options.iterations = 23;
  options.seed = 7;
  options.fault_costs = true;
  MonteCarloResult alone = run_monte_carlo(testing::small_dense_model(), cluster, plan, {}, model, options);
  auto split = on_processes<MonteCarloResult>(3, [&](const WorkSplit* s) {
    MonteCarloOptions mine = options;
    mine.split = s;
    return run_monte_carlo(testing::small_dense_model(), cluster, plan, {}, model, mine);
  });
  for (int p = 0; p < 3; ++p) {
    INFO("process " << p);
    CHECK(split[p].step_times_s == alone.step_times_s);
    CHECK(split[p].percentiles.p90 == alone.percentiles.p90);
    CHECK(split[p].mean_s == alone.mean_s);
    REQUIRE(split[p].fault_costs.size() == alone.fault_costs.size());
    for (size_t f = 0; f < alone.fault_costs.size(); ++f) {
      CHECK(split[p].fault_costs[f].cost_s == alone.fault_costs[f].cost_s);
    }
  }
  // Iteration 0 (the report's timeline) is process 0's.
  CHECK(split[0].timeline.makespan == alone.timeline.makespan);
  CHECK(split[0].step.lowered.graph.num_tasks() == alone.step.lowered.graph.num_tasks());
}

TEST_CASE("WorkSplit: sensitivity on 1 and 2 processes gives the same entries") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100-4");
  StragglerModel slow;
  slow.stragglers.push_back(parse_straggler_flag("gpu=3:0.7"));
  Plan plan = parse_plan("tp=4,pp=4,dp=2,mbs=1,gbs=16,schedule=1f1b", "test");
  Sensitivity alone = step_sensitivity(testing::small_dense_model(), cluster, plan, {}, slow, 1);
  auto split = on_processes<Sensitivity>(2, [&](const WorkSplit* s) {
    return step_sensitivity(testing::small_dense_model(), cluster, plan, {}, slow, 1, s);
  });
  for (const Sensitivity& mine : split) {
    CHECK(mine.base_step_time_s == alone.base_step_time_s);
    REQUIRE(mine.entries.size() == alone.entries.size());
    for (size_t i = 0; i < alone.entries.size(); ++i) {
      CHECK(mine.entries[i].component == alone.entries[i].component);
      CHECK(mine.entries[i].step_time_s == alone.entries[i].step_time_s);
    }
  }
}

TEST_CASE("WorkSplit: a plan search on 1 and 3 processes ranks the same plans") {
  ModelSpec model = load_model_spec("llama3-8b");
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2");
  PlannerOptions options;
  options.space.global_batch_size = 32;
  options.top = 8;
  options.threads = 1;
  options.batch_size = 4;  // Many batches: the threshold is exchanged often.
  PlanSearchResult alone = search_plans(model, cluster, options);
  auto split = on_processes<PlanSearchResult>(3, [&](const WorkSplit* s) {
    PlannerOptions mine = options;
    mine.split = s;
    return search_plans(model, cluster, mine);
  });
  REQUIRE(!alone.plans.empty());
  for (int p = 0; p < 3; ++p) {
    INFO("process " << p);
    REQUIRE(split[p].plans.size() == alone.plans.size());
    for (size_t i = 0; i < alone.plans.size(); ++i) {
      CHECK(plan_to_inline(split[p].plans[i].plan) == plan_to_inline(alone.plans[i].plan));
      CHECK(split[p].plans[i].objective == alone.plans[i].objective);
      CHECK(split[p].plans[i].time_bound_s == alone.plans[i].time_bound_s);
    }
    CHECK(split[p].stats.simulated == alone.stats.simulated);
    CHECK(split[p].stats.bounded_out == alone.stats.bounded_out);
  }
  // Process 0 has every returned plan's metrics (simulated again where another process did).
  for (size_t i = 0; i < alone.plans.size(); ++i) {
    CHECK(split[0].plans[i].metrics.iteration_time_s == alone.plans[i].metrics.iteration_time_s);
    CHECK(split[0].plans[i].metrics.peak_memory_bytes == alone.plans[i].metrics.peak_memory_bytes);
    CHECK(split[0].plans[i].why == alone.plans[i].why);
  }
}

}  // namespace
}  // namespace ppsim
