#include "simulator/engine/engine.h"

#include <catch2/catch.hpp>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

Task compute(StreamId stream, double seconds) {
  Task task;
  task.kind = TaskKind::kCompute;
  task.stream = stream;
  task.work = seconds;
  return task;
}

Task transfer(StreamId stream, double bytes, RouteId route, double latency = 0) {
  Task task;
  task.kind = TaskKind::kTransfer;
  task.stream = stream;
  task.work = bytes;
  task.route = route;
  task.latency = latency;
  return task;
}

TEST_CASE("Engine: flows late in simulated time finish (time never stops advancing)") {
  // At t = 1e24 s a double's step is ~1.7e8 s, so a 1e-3 s transfer adds no representable
  // time: the flow must count as done, not be rechecked at the same instant forever (the
  // pre-fix engine cycled in drain_flows here). Two flows share the link, ending together.
  TaskGraph graph;
  StreamId gpu = graph.add_stream(0, "gpu0");
  StreamId other = graph.add_stream(1, "gpu1");
  LinkId link = graph.add_link(1e9, "link");
  RouteId route = graph.add_route({link});
  TaskId slow = graph.add_task(compute(gpu, 1e24));
  TaskId send = graph.add_task(transfer(gpu, 1e6, route));
  TaskId also = graph.add_task(transfer(other, 3e5, route, 1e24));
  graph.add_dependency(slow, send);
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[send] == 1e24);
  CHECK(timeline.end[also] == 1e24);
  CHECK(timeline.events < 20);
}

TEST_CASE("Engine: flows at 1e8 s still advance by their own duration") {
  // At 1e8 s the step is ~1.5e-8 s: a 1 MB transfer at 1 GB/s (1e-3 s) is still resolved.
  TaskGraph graph;
  StreamId gpu = graph.add_stream(0, "gpu0");
  LinkId link = graph.add_link(1e9, "link");
  RouteId route = graph.add_route({link});
  TaskId slow = graph.add_task(compute(gpu, 1e8));
  TaskId send = graph.add_task(transfer(gpu, 1e6, route));
  graph.add_dependency(slow, send);
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[send] == Approx(1e8 + 1e-3).epsilon(1e-15));
}

TEST_CASE("Engine: a stream runs its tasks in order, back to back") {
  TaskGraph graph;
  StreamId gpu = graph.add_stream(0, "gpu0");
  for (double seconds : {1.0, 2.0, 3.5}) graph.add_task(compute(gpu, seconds));
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.makespan == 6.5);
  CHECK(timeline.start[2] == 3.0);
}

TEST_CASE("Engine: dependencies across streams and the speed factor") {
  TaskGraph graph;
  StreamId fast = graph.add_stream(0, "fast");
  StreamId slow = graph.add_stream(1, "slow", 0.5);
  TaskId a = graph.add_task(compute(fast, 1));
  TaskId b = graph.add_task(compute(slow, 1));  // 2 s at half speed.
  TaskId c = graph.add_task(compute(fast, 1));
  graph.add_dependency(b, c);
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[a] == 1);
  CHECK(timeline.end[b] == 2);
  CHECK(timeline.start[c] == 2);
  CHECK(timeline.makespan == 3);
}

TEST_CASE("Engine: flows sharing a link share its bandwidth") {
  TaskGraph graph;
  LinkId nic = graph.add_link(10.0, "nic");
  RouteId route = graph.add_route({nic});
  StreamId s0 = graph.add_stream(0, "s0");
  StreamId s1 = graph.add_stream(1, "s1");
  TaskId alone = graph.add_task(transfer(s0, 10, route));
  graph.add_task(compute(s1, 1));
  TaskId shared_a = graph.add_task(transfer(s1, 10, route));
  Timeline timeline = simulate_graph(graph);
  // 0-1 s: the first flow alone at 10 B/s moves 10 B and ends at 1 s.
  CHECK(timeline.end[alone] == Approx(1.0));
  // The second starts at 1 s alone: 1 s more.
  CHECK(timeline.end[shared_a] == Approx(2.0));

  TaskGraph both;
  LinkId link = both.add_link(10.0, "nic");
  RouteId r = both.add_route({link});
  TaskId x = both.add_task(transfer(both.add_stream(0, "a"), 10, r));
  TaskId y = both.add_task(transfer(both.add_stream(1, "b"), 20, r));
  Timeline shared = simulate_graph(both);
  // Each gets 5 B/s until x ends at 2 s; then y has 10 B left at 10 B/s.
  CHECK(shared.end[x] == Approx(2.0));
  CHECK(shared.end[y] == Approx(3.0));
}

TEST_CASE("Engine: max-min fairness gives a bottlenecked flow's share to the others") {
  TaskGraph graph;
  LinkId wide = graph.add_link(10.0, "wide");
  LinkId narrow = graph.add_link(2.0, "narrow");
  TaskId through_both = graph.add_task(transfer(graph.add_stream(0, "a"), 4, graph.add_route({wide, narrow})));
  TaskId wide_only = graph.add_task(transfer(graph.add_stream(1, "b"), 8, graph.add_route({wide})));
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[through_both] == Approx(2.0));  // 2 B/s on the narrow link.
  CHECK(timeline.end[wide_only] == Approx(1.0));     // 8 B/s: the rest of the wide link.
}

TEST_CASE("Engine: a route's rate cap and a transfer's latency") {
  TaskGraph graph;
  LinkId link = graph.add_link(100.0, "link");
  TaskId capped = graph.add_task(transfer(graph.add_stream(0, "a"), 10, graph.add_route({link}, 5.0), 0.5));
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[capped] == Approx(2.5));
}

TEST_CASE("Engine: collective members start together and end together") {
  TaskGraph graph;
  StreamId s0 = graph.add_stream(0, "s0");
  StreamId s1 = graph.add_stream(1, "s1");
  LinkId l0 = graph.add_link(1.0, "l0");
  LinkId l1 = graph.add_link(1.0, "l1");
  graph.add_task(compute(s0, 1));
  graph.add_task(compute(s1, 3));
  int32_t group = graph.new_group();
  Task member0 = transfer(s0, 1, graph.add_route({l0}));
  member0.group = group;
  Task member1 = transfer(s1, 2, graph.add_route({l1}));
  member1.group = group;
  TaskId m0 = graph.add_task(member0);
  TaskId m1 = graph.add_task(member1);
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.start[m0] == 3);
  CHECK(timeline.start[m1] == 3);
  CHECK(timeline.end[m0] == Approx(5));
  CHECK(timeline.end[m1] == Approx(5));
}

TEST_CASE("Engine: a collective's members move in lockstep, paced by their busiest link") {
  // l0 carries member 0 and flow B; l1 carries member 1 and flows A and C (capacity 1 each).
  // Progressive filling by hand: l1 saturates first at 1/3 each, which freezes the group (its
  // members share one rate) and A and C; B takes the rest of l0, 2/3, and ends at 1.5. The
  // group moves its 1 byte at 1/3 and ends at 3; A and C then run at 1/2 and end at
  // 3 + (3 - 1) / (1/2) = 7. (Members flowing independently would give B only 1/2: end 2.)
  TaskGraph graph;
  LinkId l0 = graph.add_link(1.0, "l0");
  LinkId l1 = graph.add_link(1.0, "l1");
  int32_t group = graph.new_group();
  Task member0 = transfer(graph.add_stream(0, "m0"), 1, graph.add_route({l0}));
  member0.group = group;
  Task member1 = transfer(graph.add_stream(1, "m1"), 1, graph.add_route({l1}));
  member1.group = group;
  TaskId m0 = graph.add_task(member0);
  TaskId m1 = graph.add_task(member1);
  TaskId b = graph.add_task(transfer(graph.add_stream(2, "b"), 1, graph.add_route({l0})));
  TaskId a = graph.add_task(transfer(graph.add_stream(3, "a"), 3, graph.add_route({l1})));
  TaskId c = graph.add_task(transfer(graph.add_stream(4, "c"), 3, graph.add_route({l1})));
  Timeline timeline = simulate_graph(graph);
  CHECK(timeline.end[b] == Approx(1.5));
  CHECK(timeline.end[m0] == Approx(3));
  CHECK(timeline.end[m1] == Approx(3));
  CHECK(timeline.end[a] == Approx(7));
  CHECK(timeline.end[c] == Approx(7));
}

TEST_CASE("Engine: a link two members cross carries the group's rate twice; the slowest latency leads") {
  TaskGraph graph;
  LinkId shared = graph.add_link(1.0, "shared");
  int32_t group = graph.new_group();
  Task member0 = transfer(graph.add_stream(0, "m0"), 1, graph.add_route({shared}), 0.25);
  member0.group = group;
  Task member1 = transfer(graph.add_stream(1, "m1"), 1, graph.add_route({shared}), 1.0);
  member1.group = group;
  TaskId m0 = graph.add_task(member0);
  TaskId m1 = graph.add_task(member1);
  Timeline timeline = simulate_graph(graph);
  // Bytes move from t = 1 (the larger latency) at 1/2 each: 1 byte takes 2 s.
  CHECK(timeline.start[m0] == 0);
  CHECK(timeline.end[m0] == Approx(3));
  CHECK(timeline.end[m1] == Approx(3));
}

TEST_CASE("Engine: memory is allocated at start and freed at end; the peak is tracked") {
  TaskGraph graph;
  StreamId gpu = graph.add_stream(0, "gpu");
  Task forward = compute(gpu, 1);
  forward.alloc_bytes = 100;
  Task backward = compute(gpu, 1);
  backward.free_bytes = 100;
  graph.add_task(forward);
  graph.add_task(forward);
  graph.add_task(backward);
  graph.add_task(forward);
  graph.add_task(backward);
  graph.add_task(backward);
  CHECK(simulate_graph(graph).peak_memory[0] == 200);
}

TEST_CASE("TaskGraph: a dependency cycle is reported as its path") {
  TaskGraph graph;
  StreamId s0 = graph.add_stream(0, "s0");
  StreamId s1 = graph.add_stream(1, "s1");
  TaskId a = graph.add_task(compute(s0, 1));
  TaskId b = graph.add_task(compute(s0, 1));
  TaskId c = graph.add_task(compute(s1, 1));
  graph.add_dependency(b, c);
  CHECK_FALSE(graph.find_cycle([](TaskId id) { return std::to_string(id); }));
  graph.add_dependency(c, a);
  std::optional<std::string> cycle = graph.find_cycle([](TaskId id) { return "t" + std::to_string(id); });
  REQUIRE(cycle);
  CHECK(*cycle == "t0 -> t1 -> t2 -> t0");
}

TEST_CASE("Engine: a prepared structure runs a changed graph as that graph alone") {
  // Two streams of compute, a lockstep pair over a capped route and a lone transfer sharing its
  // link: everything a run may change (compute work, stream speed, latency, rate caps) is used.
  TaskGraph graph;
  StreamId s0 = graph.add_stream(0, "s0");
  StreamId s1 = graph.add_stream(1, "s1");
  LinkId shared = graph.add_link(2.0, "shared");
  LinkId other = graph.add_link(1.0, "other");
  RouteId capped = graph.add_route({shared}, 1.5);
  TaskId c0 = graph.add_task(compute(s0, 1));
  TaskId c1 = graph.add_task(compute(s1, 2));
  int32_t group = graph.new_group();
  Task member0 = transfer(s0, 3, capped, 0.5);
  member0.group = group;
  Task member1 = transfer(s1, 2, graph.add_route({other}), 0.25);
  member1.group = group;
  TaskId m0 = graph.add_task(member0);
  graph.add_task(member1);
  TaskId lone = graph.add_task(transfer(graph.add_stream(2, "s2"), 4, graph.add_route({shared})));
  graph.add_dependency(c1, lone);
  // By hand: the group is ready at 2 (c1), flows from 2.5 (its slower latency); the lone
  // transfer has moved 1 of its 4 bytes alone on `shared` (2 B/s) by then; from 2.5 both get
  // 1 B/s (`shared` split two ways, `other` full), so both end at 2.5 + 3 = 5.5.
  const PreparedGraph prepared(graph);
  const Timeline as_built = simulate_graph(prepared, graph);
  CHECK(as_built.end[lone] == Approx(5.5));
  CHECK(as_built.makespan == Approx(5.5));

  TaskGraph changed = graph;
  changed.mutable_task(c0).work = 1.5;
  changed.mutable_stream(s1).speed = 0.5;
  changed.mutable_task(m0).latency = 1.0;
  changed.mutable_route(capped).rate_cap = 0.75;
  // By hand: c1 takes 4 s at half speed; the lone transfer moves 2 bytes alone by 5, when the
  // group (latency 1) starts at its 0.75 B/s cap and the lone one takes the rest of `shared`,
  // 1.25 B/s: it ends at 5 + 2 / 1.25 = 6.6, the group at 5 + 3 / 0.75 = 9.
  const Timeline alone = simulate_graph(changed);
  CHECK(alone.end[c0] == Approx(1.5));
  CHECK(alone.end[lone] == Approx(6.6));
  CHECK(alone.end[m0] == Approx(9));
  const Timeline reused = simulate_graph(prepared, changed);
  CHECK(reused.start == alone.start);
  CHECK(reused.end == alone.end);
  CHECK(reused.events == alone.events);
  CHECK(reused.makespan == alone.makespan);
  CHECK(reused.makespan > as_built.makespan);  // The changes were read, not the prepared graph's.

  // Another graph's structure is refused, not misread.
  TaskGraph bigger = graph;
  bigger.add_task(compute(s0, 1));
  CHECK_THROWS_AS(simulate_graph(prepared, bigger), InternalError);
}

TEST_CASE("Engine: same graph, same timeline") {
  auto build = [] {
    TaskGraph graph;
    LinkId link = graph.add_link(3.0, "l");
    RouteId route = graph.add_route({link});
    for (int i = 0; i < 5; ++i) {
      StreamId s = graph.add_stream(i, "s" + std::to_string(i));
      graph.add_task(compute(s, 0.1 * i));
      graph.add_task(transfer(s, 1.0 + i, route, 0.01));
    }
    return graph;
  };
  Timeline first = simulate_graph(build());
  Timeline second = simulate_graph(build());
  CHECK(first.start == second.start);
  CHECK(first.end == second.end);
  CHECK(first.events == second.events);
}

}  // namespace
}  // namespace ppsim

namespace ppsim {
namespace {

TEST_CASE("Engine: a weighted flow stands for identical twins on a shared link") {
  // Two identical flows on one link...
  TaskGraph twins;
  LinkId link = twins.add_link(10.0, "nic");
  RouteId route = twins.add_route({link});
  Task flow;
  flow.kind = TaskKind::kTransfer;
  flow.work = 10;
  flow.route = route;
  flow.stream = twins.add_stream(0, "a");
  TaskId first = twins.add_task(flow);
  flow.stream = twins.add_stream(1, "b");
  twins.add_task(flow);
  // ...take as long as one flow of weight 2.
  TaskGraph weighted;
  LinkId shared = weighted.add_link(10.0, "nic");
  flow.route = weighted.add_route({shared}, 0, {2.0});
  flow.stream = weighted.add_stream(0, "a");
  TaskId single = weighted.add_task(flow);
  CHECK(simulate_graph(twins).end[first] == Approx(2.0));
  CHECK(simulate_graph(weighted).end[single] == Approx(2.0));
}

}  // namespace
}  // namespace ppsim
