// `ppsim profile`: the CPU backend end to end, --show, bad profile files, and the CUDA
// backend's answer on a machine without a GPU.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "simulator/cost/profile_table.h"
#include "simulator/spec/json_reader.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;
using testing::temp_path;

TEST_CASE("CLI profile: --backend cpu --quick writes a profile that --show reads") {
  std::string out = temp_path("cpu_profile.json");
  auto result = run_ppsim("profile --backend cpu --quick -w 1 -n 3 --out " + out);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::StartsWith("# ppsim profile (format version 1)"));
  CHECK_THAT(result.out, Catch::Contains("# warning: CPU backend"));
  CHECK_THAT(result.out, Catch::Contains("algbw"));
  CHECK_THAT(result.out, Catch::Contains("# OK"));
  Profile p = load_profile(out);
  CHECK(p.backend == "cpu");
  auto shown = run_ppsim("profile --show " + out);
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains("# Fits"));
  std::remove(out.c_str());
}

TEST_CASE("CLI profile --model: the model's own GEMM and attention shapes are measured") {
  std::string out = temp_path("model_profile.json");
  // small_llama at mbs 1: 128 tokens, hidden 256, ffn 688 (SwiGLU: gate and up fused, 1376).
  auto result = run_ppsim("profile --backend cpu --quick -w 0 -n 1 --model "
                          "tests/data/validate/small_llama.json --plan pp=2,mbs=1,gbs=8 --out " +
                          out);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  Profile p = load_profile(out);
  auto has_gemm = [&](double m, double n, double k) {
    for (const GemmSample& g : p.gemm) {
      if (g.m == m && g.n == n && g.k == k && g.batch == 1) return true;
    }
    return false;
  };
  CHECK(has_gemm(128, 768, 256));   // QKV forward.
  CHECK(has_gemm(128, 256, 768));   // Its input gradient (m, k, n).
  CHECK(has_gemm(256, 768, 128));   // Its weight gradient (k, n, m).
  CHECK(has_gemm(128, 1376, 256));  // Gate and up projections.
  CHECK(has_gemm(128, 256, 688));   // Down projection.
  CHECK(has_gemm(128, 1024, 256));  // Head: vocab 1024.
  CHECK(has_gemm(256, 768, 256));  // The quick ladder is still there.
  bool model_attention = false;
  for (const AttentionSample& a : p.attention) {
    model_attention |= a.batch_heads == 4 && a.seq_len == 128 && a.head_dim == 64;
  }
  CHECK(model_attention);
  std::remove(out.c_str());

  auto no_model = run_ppsim("profile --backend cpu --quick --plan pp=2,mbs=1,gbs=8");
  CHECK(no_model.exit_code == 2);
  CHECK_THAT(no_model.err, Catch::Contains("--plan") && Catch::Contains("needs --model"));
  auto bad_tp = run_ppsim("profile --backend cpu --quick --model "
                          "tests/data/validate/small_llama.json --plan tp=3,mbs=1,gbs=8");
  CHECK(bad_tp.exit_code == 2);
  CHECK_THAT(bad_tp.err, Catch::Contains("tp=3 does not divide the 4 attention heads"));
}

TEST_CASE("CLI profile: a bad profile file exits 2 naming the file and the JSON path") {
  auto missing = run_ppsim("profile --show tests/data/no_such_profile.json");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("no_such_profile.json"));
  std::string bad = temp_path("bad_profile.json");
  FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("{\"format\": \"ppsim-profile\", \"version\": 1, \"backend\": \"gpu\"}", f);
  std::fclose(f);
  auto result = run_ppsim("profile --show " + bad);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("ppsim: error: "));
  CHECK_THAT(result.err, Catch::Contains("/backend: unknown value 'gpu'"));
  std::remove(bad.c_str());
  auto flag = run_ppsim("profile --backend tpu");
  CHECK(flag.exit_code == 2);
}

TEST_CASE("CLI profile: --backend cuda without a GPU says so and exits 2") {
  std::string out = temp_path("cuda_profile.json");
  auto result = run_ppsim("profile --backend cuda --quick --out " + out);
  if (result.exit_code == 0) {
    WARN("a CUDA device is present: the no-GPU message is not tested here");
    std::remove(out.c_str());
    return;
  }
  CHECK(result.exit_code == 2);
  bool no_device = result.err.find("no CUDA device found") != std::string::npos;
  bool no_build = result.err.find("built without CUDA") != std::string::npos;
  INFO(result.err);
  CHECK((no_device || no_build));
  CHECK_THAT(result.err, Catch::Contains("use --backend cpu"));
}


// One CPU profile per test run, shared by the tests that consume it.
const std::string& cpu_profile() {
  static const std::string path = [] {
    std::string out = temp_path("shared_cpu_profile.json");
    auto result = run_ppsim("profile --backend cpu --quick -w 1 -n 3 --out " + out);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return out;
  }();
  return path;
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// dgx-h100-1 with a "profile" key.
std::string cluster_with_profile(const std::string& profile) {
  return R"({"name": "one-node", "profile": ")" + profile + R"(",
  "nodes": [{"count": 1, "gpus_per_node": 8, "gpu": "H100-SXM-80GB",
             "intra_node": {"bandwidth_GBps": 450, "latency_us": 2.5},
             "nic": {"bandwidth_Gbps": 400, "per_gpu": true, "latency_us": 5}}]})";
}

const char* kSmallPlan =
    "--model llama3-8b --cluster dgx-h100-1 --plan tp=2,pp=2,dp=2,mbs=1,gbs=16 --json";

TEST_CASE("CLI simulate --profile: measured costs replace the roofline and the report says so") {
  auto roofline = run_ppsim(std::string("simulate ") + kSmallPlan);
  REQUIRE(roofline.exit_code == 0);
  auto profiled = run_ppsim(std::string("simulate ") + kSmallPlan + " --profile " + cpu_profile());
  INFO(profiled.err);
  REQUIRE(profiled.exit_code == 0);
  nlohmann::json a = nlohmann::json::parse(roofline.out);
  nlohmann::json b = nlohmann::json::parse(profiled.out);
  CHECK(a["cost_source"] == "roofline");
  CHECK(a["profile"].is_null());
  CHECK(b["cost_source"] == "profile");
  CHECK(b["profile"] == cpu_profile());
  CHECK(b["cost_passes"]["profile"].get<int64_t>() > 0);
  // The CPU profile measured unfused attention (eigen); the plan runs megatron-core's fused
  // kernel, so its attention passes alone keep the roofline, and the report names the kernel.
  CHECK(a["unprofiled_attention"].is_null());
  CHECK(b["unprofiled_attention"] == "fused");
  CHECK(b["cost_passes"]["roofline"].get<int64_t>() > 0);
  auto unfused = run_ppsim("simulate --model llama3-8b --cluster dgx-h100-1 --plan "
                           "tp=2,pp=2,dp=2,mbs=1,gbs=16,attention=unfused --json --profile " +
                           cpu_profile());
  INFO(unfused.err);
  REQUIRE(unfused.exit_code == 0);
  nlohmann::json c = nlohmann::json::parse(unfused.out);
  CHECK(c["cost_passes"]["roofline"] == 0);
  CHECK(c["unprofiled_attention"].is_null());
  // Its attention passes (forward, input gradient) are the roofline ones under the fused kernel.
  CHECK(b["cost_passes"]["roofline"].get<int64_t>() ==
        c["cost_passes"]["profile"].get<int64_t>() - b["cost_passes"]["profile"].get<int64_t>());
  // The CPU measured small GEMMs only: the model's GEMM passes lie beyond them, while its
  // memory-bound passes fall inside the quick ladder (16 KiB - 32 MiB arrays).
  CHECK(b["cost_passes"]["extrapolated"].get<int64_t>() > 0);
  CHECK(b["cost_passes"]["extrapolated"].get<int64_t>() < b["cost_passes"]["profile"].get<int64_t>());
  CHECK(b["comm_costs"]["profile"].get<int64_t>() > 0);  // 2-rank threads collectives.
  CHECK(b["iteration_time_s"].get<double>() != Approx(a["iteration_time_s"].get<double>()));
  auto text = run_ppsim(std::string("simulate --model llama3-8b --cluster dgx-h100-1 "
                                    "--plan tp=2,pp=2,dp=2,mbs=1,gbs=16 --profile ") +
                        cpu_profile());
  CHECK_THAT(text.out, Catch::Contains("# costs    profile (profile " + cpu_profile()));
  CHECK_THAT(text.out, Catch::Contains("lie outside the profile's measured range"));
  CHECK_THAT(text.out, Catch::Contains("the profile did not measure this plan's attention "
                                       "kernel (fused)"));
}

TEST_CASE("CLI simulate: a cluster's relative profile path is read from the cluster's folder") {
  std::string folder = temp_path("cluster_dir");
  REQUIRE(std::system(("mkdir -p " + folder + " && cp " + cpu_profile() + " " + folder +
                       "/measured.json").c_str()) == 0);
  write_text(folder + "/cluster.json", cluster_with_profile("measured.json"));
  auto from_spec = run_ppsim("simulate --model llama3-8b --cluster " + folder +
                             "/cluster.json --plan tp=2,pp=2,dp=2,mbs=1,gbs=16 --json");
  INFO(from_spec.err);
  REQUIRE(from_spec.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(from_spec.out);
  CHECK(json["cost_source"] == "profile");
  CHECK(json["profile"] == folder + "/measured.json");
  // The flag wins over the spec.
  write_text(folder + "/broken.json", cluster_with_profile("missing.json"));
  auto flag = run_ppsim("simulate --model llama3-8b --cluster " + folder +
                        "/broken.json --plan tp=2,pp=2,dp=2,mbs=1,gbs=16 --json --profile " +
                        cpu_profile());
  CHECK(flag.exit_code == 0);
  std::system(("rm -rf " + folder).c_str());
}

TEST_CASE("CLI simulate/plan: a missing or malformed profile exits 2 naming the file and path") {
  std::string bad = temp_path("malformed_profile.json");
  write_text(bad, R"({"format": "ppsim-profile", "version": 1, "backend": "cpu", "gemm": 3})");
  auto malformed = run_ppsim(std::string("simulate ") + kSmallPlan + " --profile " + bad);
  CHECK(malformed.exit_code == 2);
  CHECK_THAT(malformed.err,
             Catch::Contains("ppsim: error: " + bad + ": /device: required key is missing"));
  auto missing_flag = run_ppsim("plan --model llama3-8b --cluster dgx-h100-1 --global-batch 8 "
                                "--profile /nonexistent/p.json");
  CHECK(missing_flag.exit_code == 2);
  CHECK_THAT(missing_flag.err, Catch::Contains("--profile: profile file '/nonexistent/p.json' "
                                               "not found"));
  std::string cluster = temp_path("cluster_missing_profile.json");
  write_text(cluster, cluster_with_profile("no_such_profile.json"));
  auto missing_spec = run_ppsim("simulate --model llama3-8b --cluster " + cluster +
                                " --plan tp=2,pp=2,dp=2,mbs=1,gbs=16");
  CHECK(missing_spec.exit_code == 2);
  CHECK_THAT(missing_spec.err, Catch::Contains(cluster + ": /profile: profile file"));
  CHECK_THAT(missing_spec.err, Catch::Contains("no_such_profile.json' not found"));
  std::remove(bad.c_str());
  std::remove(cluster.c_str());
}

TEST_CASE("CLI plan --profile: the search runs on measured costs and reports them") {
  auto result = run_ppsim("plan --model llama3-8b --cluster dgx-h100-1 --global-batch 8 --top 2 "
                          "--threads 1 --json --profile " + cpu_profile());
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  CHECK(json["cost_source"] == "profile");
  CHECK(json["profile"] == cpu_profile());
  CHECK(json["plans"].size() == 2);
  CHECK(json["cost_passes"]["profile"].get<int64_t>() > 0);
}

}  // namespace
}  // namespace ppsim
