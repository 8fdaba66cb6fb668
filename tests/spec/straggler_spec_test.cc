// Straggler models as the user states them: flag forms, the cluster spec's "stragglers" array,
// and the errors bad ones give.
#include "simulator/spec/straggler_spec.h"

#include <catch2/catch.hpp>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// The message of the InputError `body` throws ("" when it throws none).
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// A two-node cluster JSON with `stragglers` as its "stragglers" value.
std::string cluster_json(const std::string& stragglers) {
  return R"({"name": "two", "nodes": [{"count": 2, "gpus_per_node": 8, "gpu": "H100-SXM-80GB",
             "intra_node": {"bandwidth_GBps": 450, "latency_us": 1},
             "nic": {"bandwidth_Gbps": 400, "per_gpu": true, "latency_us": 5}}],
           "stragglers": )" +
         stragglers + "}";
}

TEST_CASE("Straggler flags: gpu, node and link forms parse to their fields") {
  Straggler gpu = parse_straggler_flag("gpu=3:0.5");
  CHECK(gpu.kind == StragglerKind::kGpu);
  CHECK(gpu.gpu == 3);
  CHECK(gpu.factor == 0.5);
  Straggler node = parse_straggler_flag("node=1:0.8");
  CHECK(node.kind == StragglerKind::kNode);
  CHECK(node.node == 1);
  Straggler link = parse_straggler_flag("link=0-1:0.25:+20:period=100:duty=0.3");
  CHECK(link.kind == StragglerKind::kLink);
  CHECK(link.node == 0);
  CHECK(link.other_node == 1);
  CHECK(link.factor == 0.25);
  CHECK(link.extra_latency == Approx(20 * kMicrosecond));
  REQUIRE(link.flapping);
  CHECK(link.flapping->period == Approx(0.1));
  CHECK(link.flapping->duty == 0.3);
  // The canonical text parses back to the same fault.
  CHECK(straggler_text(link) == "link=0-1:0.25:+20:period=100:duty=0.3");
  CHECK(straggler_text(parse_straggler_flag(straggler_text(link))) == straggler_text(link));
  Straggler latency_only = parse_straggler_flag("link=2-0:1:+50");
  CHECK(latency_only.factor == 1);
  CHECK_FALSE(latency_only.flapping);
}

TEST_CASE("Straggler flags: jitter distributions") {
  CHECK(parse_jitter_flag("lognormal:0.05").kind == JitterKind::kLognormal);
  CHECK(parse_jitter_flag("uniform:0.1").parameter == 0.1);
  CHECK(parse_jitter_flag("exponential:0.02").kind == JitterKind::kExponential);
  CHECK(jitter_text(parse_jitter_flag("lognormal:0.05")) == "jitter=lognormal:0.05");
}

TEST_CASE("Straggler flags: bad values name the flag and the expected form") {
  for (const char* bad :
       {"gpu=3", "gpu=-1:0.5", "gpu=3:1.5", "gpu=3:0", "gpu=x:0.5", "disk=1:0.5", "link=0-0:0.5",
        "link=0:0.5", "link=0-1", "link=0-1:0.5:period=10", "link=0-1:0.5:duty=0.5:period=10:x",
        "link=0-1:0.5:period=10:duty=2", "link=0-1:0.5:+-3", "3:0.5"}) {
    INFO(bad);
    std::string message = error_of([&] { parse_straggler_flag(bad); });
    CHECK(message.find("--straggler") == 0);
    CHECK(message.find("expected gpu=RANK:FACTOR") != std::string::npos);
  }
  CHECK(error_of([] { parse_straggler_flag("gpo=1:0.5"); }).find("did you mean 'gpu'") !=
        std::string::npos);
  for (const char* bad : {"lognormal", "lognormal:-1", "gauss:0.1", "uniform:x"}) {
    INFO(bad);
    std::string message = error_of([&] { parse_jitter_flag(bad); });
    CHECK(message.find("--jitter") == 0);
    CHECK(message.find("expected lognormal:SIGMA") != std::string::npos);
  }
  CHECK(error_of([] { parse_jitter_flag("lognormel:0.1"); }).find("did you mean 'lognormal'") !=
        std::string::npos);
}

TEST_CASE("Straggler JSON: objects and flag strings in the cluster spec") {
  ClusterSpec cluster =
      parse_cluster_spec(cluster_json(R"([{"gpu": 3, "factor": 0.5}, {"node": 1, "factor": 0.9},
                       {"link": [0, 1], "factor": 0.5, "extra_latency_us": 10,
                        "period_ms": 200, "duty": 0.25},
                       "gpu=9:0.7", {"jitter": "uniform", "max": 0.1}])"),
                         "c.json");
  const StragglerModel& model = cluster.stragglers;
  REQUIRE(model.stragglers.size() == 4);
  CHECK(straggler_text(model.stragglers[0]) == "gpu=3:0.5");
  CHECK(straggler_text(model.stragglers[1]) == "node=1:0.9");
  CHECK(straggler_text(model.stragglers[2]) == "link=0-1:0.5:+10:period=200:duty=0.25");
  CHECK(straggler_text(model.stragglers[3]) == "gpu=9:0.7");
  REQUIRE(model.jitter);
  CHECK(jitter_text(*model.jitter) == "jitter=uniform:0.1");
  CHECK(model.stochastic());
  CHECK(model.has_slow_gpus());
}

TEST_CASE("Straggler JSON: unknown keys, missing parts and out-of-range indices are errors") {
  auto parse = [](const std::string& stragglers) {
    return error_of([&] { parse_cluster_spec(cluster_json(stragglers), "c.json"); });
  };
  std::string typo = parse(R"([{"gpu": 3, "facter": 0.5}])");
  CHECK(typo.find("c.json: /stragglers/0") == 0);
  CHECK(typo.find("did you mean 'factor'") != std::string::npos);
  CHECK(parse(R"([{"gpu": 3, "node": 1, "factor": 0.5}])").find("exactly one of") !=
        std::string::npos);
  CHECK(parse(R"([{"gpu": 16, "factor": 0.5}])").find("GPUs 0-15") != std::string::npos);
  CHECK(parse(R"([{"node": 2, "factor": 0.5}])").find("nodes 0-1") != std::string::npos);
  CHECK(parse(R"([{"link": [0, 1], "period_ms": 100}])").find("/stragglers/0/period_ms") !=
        std::string::npos);
  CHECK(parse(R"(["gpu=1:2"])").find("c.json: /stragglers/0") == 0);
  CHECK(parse(R"([{"jitter": "uniform", "sigma": 0.1}])").find("/stragglers/0") !=
        std::string::npos);
  CHECK(parse(R"(["jitter=uniform:0.1", {"jitter": "lognormal", "sigma": 0.1}])")
            .find("a second jitter model") != std::string::npos);
}

}  // namespace
}  // namespace ppsim
