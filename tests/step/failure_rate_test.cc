// Plan footprint and failure rate: the GPUs, hosts and NICs a plan occupies, and the job's
// failure rate from them.
#include "simulator/step/failure_rate.h"

#include <catch2/catch.hpp>

#include "simulator/step/plan_footprint.h"

namespace ppsim {
namespace {

TEST_CASE("Failure rate: Llama 3's plan on 16,384 H100 gives back 419 interruptions in 54 days") {
  ClusterSpec cluster = load_cluster_spec("dgx-h100:2048");
  Plan plan = parse_plan("tp=8,pp=16,dp=128,mbs=1,gbs=2048", "test");
  PlanFootprint footprint = plan_footprint(cluster, plan);
  CHECK(footprint.gpus() == 16384);
  CHECK(footprint.hosts() == 2048);
  CHECK(footprint.nics() == 16384);
  FailureRate rate = job_failure_rate(cluster, footprint);
  CHECK(rate.total() * 54 * 86400 == Approx(419).epsilon(1e-12));
  CHECK(rate.gpu * 54 * 86400 == Approx(268).epsilon(1e-12));
  CHECK(rate.node * 54 * 86400 == Approx(109).epsilon(1e-12));
  CHECK(rate.nic * 54 * 86400 == Approx(42).epsilon(1e-12));
}

TEST_CASE("Plan footprint: a partial node, placements and rack-scale domains") {
  // 12 GPUs of 4 DGX H100: one whole node and half of the next; one NIC per GPU.
  ClusterSpec dgx = load_cluster_spec("dgx-h100-4");
  PlanFootprint partial = plan_footprint(dgx, parse_plan("tp=2,pp=1,dp=6,gbs=6", "test"));
  CHECK(partial.gpus() == 12);
  CHECK(partial.hosts() == 2);
  CHECK(partial.nics() == 12);
  // GB200 NVL72: one 72-GPU domain is 18 hosts of 4.
  ClusterSpec rack = load_cluster_spec("gb200-nvl72:1");
  PlanFootprint domain = plan_footprint(rack, parse_plan("tp=4,pp=1,dp=18,gbs=18", "test"));
  CHECK(domain.gpus() == 72);
  CHECK(domain.hosts() == 18);
  CHECK(domain.nics() == 72);
  // Stages placed on node groups: each group's share.
  ClusterSpec mixed = load_cluster_spec("mixed-a100-h100");
  Plan placed = parse_plan("tp=8,pp=2,dp=2,gbs=64,placement=1:0", "test");  // 16 GPUs a stage.
  PlanFootprint split = plan_footprint(mixed, placed);
  CHECK(split.groups[0].gpus == 16);
  CHECK(split.groups[0].hosts == 2);
  CHECK(split.groups[1].gpus == 16);
  CHECK(split.groups[1].hosts == 2);
  // Fewer failures on fewer parts.
  CHECK(job_failure_rate(dgx, partial).total() <
        job_failure_rate(dgx, plan_footprint(dgx, parse_plan("tp=8,dp=4,gbs=4", "test"))).total());
}

}  // namespace
}  // namespace ppsim
