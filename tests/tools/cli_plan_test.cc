// `ppsim plan` from the command line: JSON fields, the round trip into `simulate --plan`,
// nothing-fits, bad flags, and --emit.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

// A small search: Llama-3.2-1B on one DGX H100 node.
constexpr const char* kSmallPlan =
    "plan --model llama3.2-1b --cluster dgx-h100-1 --global-batch 16 --seq-len 2048 --top 3";

TEST_CASE("CLI plan: --json has the documented fields, best first") {
  testing::CommandResult result = run_ppsim(std::string(kSmallPlan) + " --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(result.out);
  for (const char* key :
       {"model", "cluster", "gpus", "global_batch_size", "seq_length", "objective",
        "objective_note", "shapes", "considered", "fitting", "dominated", "dominance_rules",
        "candidates", "simulated", "bounded_out", "plans"}) {
    INFO(key);
    CHECK(json.contains(key));
  }
  CHECK(json["considered"].get<int64_t>() > json["simulated"].get<int64_t>());
  CHECK(json["simulated"].get<int64_t>() > 0);
  const nlohmann::json& plans = json["plans"];
  REQUIRE(plans.size() == 3);
  double previous = 0;
  for (const nlohmann::json& plan : plans) {
    for (const char* key :
         {"rank", "plan", "iteration_time_s", "tokens_per_s", "mfu", "peak_memory_bytes", "fits",
          "objective", "why", "breakdown_s", "stages"}) {
      INFO(key);
      CHECK(plan.contains(key));
    }
    CHECK(plan["fits"].get<bool>());
    CHECK(plan["iteration_time_s"].get<double>() >= previous);
    previous = plan["iteration_time_s"].get<double>();
    CHECK(plan["plan"].is_object());
  }
}

TEST_CASE("CLI plan: the best plan's JSON runs as is in simulate --plan") {
  testing::CommandResult planned = run_ppsim(std::string(kSmallPlan) + " --json");
  REQUIRE(planned.exit_code == 0);
  nlohmann::json best = nlohmann::json::parse(planned.out)["plans"][0];
  std::string plan_json = best["plan"].dump();
  testing::CommandResult simulated = run_ppsim(
      "simulate --model llama3.2-1b --cluster dgx-h100-1 --json --plan '" + plan_json + "'");
  INFO(simulated.err);
  REQUIRE(simulated.exit_code == 0);
  nlohmann::json step = nlohmann::json::parse(simulated.out);
  CHECK(step["iteration_time_s"].get<double>() == best["iteration_time_s"].get<double>());
  CHECK(step["peak_memory_bytes"].get<double>() == best["peak_memory_bytes"].get<double>());
  CHECK(step["fits"].get<bool>());
}

TEST_CASE("CLI plan: text report has the table, the breakdown and OK") {
  testing::CommandResult result = run_ppsim(kSmallPlan);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  for (const char* text :
       {"# ppsim plan", "# objective time", "plans considered", "simulated", "tokens/s", "MFU",
        "why", "fastest step", "# breakdown", "# OK: best step"}) {
    INFO(text);
    CHECK(result.out.find(text) != std::string::npos);
  }
  // Every line that is not a table row starts with '#'.
  size_t start = 0;
  int rows = 0;
  while (start < result.out.size()) {
    size_t end = result.out.find('\n', start);
    std::string line = result.out.substr(start, end - start);
    if (!line.empty() && line[0] != '#') ++rows;
    start = end + 1;
  }
  CHECK(rows == 3);
}

TEST_CASE("CLI plan: nothing fits exits 3 naming the closest plan and how far over") {
  testing::CommandResult result =
      run_ppsim("plan --model llama3.1-405b --cluster dgx-h100-1 --global-batch 16");
  CHECK(result.exit_code == 3);
  CHECK(result.err.find("ppsim: nothing fits: the closest plan, tp=") != std::string::npos);
  CHECK(result.err.find("GiB over its") != std::string::npos);
  CHECK(result.out.find("# NOTHING FITS") != std::string::npos);
  testing::CommandResult json =
      run_ppsim("plan --model llama3.1-405b --cluster dgx-h100-1 --global-batch 16 --json");
  CHECK(json.exit_code == 3);
  nlohmann::json report = nlohmann::json::parse(json.out);
  CHECK(report["plans"].empty());
  CHECK(report["closest"]["over_bytes"].get<double>() > 0);
}

TEST_CASE("CLI plan: bad flags exit 2") {
  struct Bad {
    const char* arguments;
    const char* expected;
  };
  const Bad bad_inputs[] = {
      {"plan --objective fastest", "unknown objective 'fastest'"},
      {"plan --top 0", "--top"},
      {"plan --bogus", "--bogus"},
      {"plan --global-batch -4", "--global-batch"},
      {"plan --schedule onefoneb", "unknown value 'onefoneb'"},
      {"plan --emit megatron", "--emit FORMAT and --out DIR go together"},
      {"plan --emit slurm --out /tmp/x", "slurm"},
      {"plan --cluster dgx-h100-1 --gpus 16", "16 GPUs requested"},
      {"plan --model no-such-model", "no-such-model"},
      {"plan --moe-dispatcher nccl", "unknown MoE dispatcher 'nccl'; expected one of alltoall, "
                                     "deepep, hybridep"},
      {"plan --moe-dispatcher deepep --runtime deepspeed",
       "runtime deepspeed cannot run the DeepEP MoE dispatcher (moe_dispatcher=deepep)"},
      {"plan --moe-dispatcher alltoall,nccl", "unknown MoE dispatcher 'nccl'"},
      {"plan --moe-dispatcher hybridep,alltoall,hybridep",
       "'hybridep' is named twice; name each dispatcher once"},
      {"plan --moe-dispatcher alltoall,hybridep --runtime torchtitan",
       "runtime torchtitan cannot run the HybridEP MoE dispatcher (moe_dispatcher=hybridep)"},
      {"plan --moe-a2a-overlap yes", "--moe-a2a-overlap: unknown MoE all-to-all overlap setting "
                                     "'yes'; expected one of off, on"},
      {"plan --moe-a2a-overlap off,on,off", "'off' is named twice; name each setting once"},
      {"plan --moe-a2a-overlap on --runtime deepspeed",
       "runtime deepspeed cannot run MoE all-to-all overlap (moe_a2a_overlap) at all"},
      {"plan --cuda-graphs full", "unknown CUDA graph scope 'full'; expected one of none, "
                                  "moe-router, layers, full-iteration"},
      {"plan --cuda-graphs moe-router", "cuda_graphs=moe-router graphs MoE routers, and "
                                        "llama3-70b has no MoE layers"},
      {"plan --model qwen3-30b-a3b --cuda-graphs layers",
       "cuda_graphs=layers needs static MoE shapes"},
      {"plan --cuda-graphs layers --runtime torchtitan",
       "runtime torchtitan cannot run CUDA graph capture of the training step"},
      {"plan --precision fp4", "unknown precision 'fp4'; expected one of bf16, fp16, fp8, nvfp4"},
      {"plan --precision nvfp4", "precision nvfp4 needs FP4 tensor cores (Blackwell: B200, GB200, "
                                 "B300, GB300), which H100-SXM-80GB lacks"},
      {"plan --cluster dgx-b200:1 --precision nvfp4 --runtime deepspeed",
       "runtime deepspeed cannot run precision nvfp4"},
      {"plan --recompute-modules moe_ac",
       "unknown recompute module 'moe_ac'; expected one of core_attn, moe_act, layernorm"},
      {"plan --recompute-modules layernorm,mla_up_proj",
       "recompute_modules mla_up_proj needs multi-latent attention"},
      {"plan --recompute-modules mlp --runtime torchtitan",
       "runtime torchtitan cannot run selective recompute of mlp"},
      {"plan --precision fp8 --fp8-recipe mx",
       "unknown fp8 recipe 'mx'; expected one of delayed, tensorwise, mxfp8, blockwise"},
      {"plan --fp8-recipe tensorwise", "--fp8-recipe tensorwise needs --precision fp8"},
      {"plan --precision fp8 --fp8-recipe mxfp8",
       "fp8_recipe mxfp8 needs Blackwell's block-scaled tensor cores"},
      {"plan --precision fp8 --fp8-recipe tensorwise --runtime deepspeed",
       "runtime deepspeed cannot run the tensorwise fp8 recipe"},
      {"plan --activation-offload always",
       "unknown activation offload setting 'always'; expected one of auto, off"},
      {"plan --partial-recompute on",
       "unknown partial recompute setting 'on'; expected one of auto, off"},
      {"plan --tp-comm-overlap maybe",
       "unknown TP communication overlap setting 'maybe'; expected one of on, off"},
      {"plan --tp-comm-overlap on --runtime deepspeed",
       "runtime deepspeed cannot run tensor-parallel communication overlap"},
      {"plan --grad-reduce-in-fp32 maybe", "--grad-reduce-in-fp32"},
      {"plan --grad-reduce-in-fp32 false --runtime megatron-lm",
       "runtime megatron-lm cannot run bf16 gradient reduction"},
  };
  for (const Bad& bad : bad_inputs) {
    INFO("ppsim " << bad.arguments);
    testing::CommandResult result = run_ppsim(bad.arguments);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == 2);
    CHECK(result.err.rfind("ppsim: error: ", 0) == 0);
    CHECK(result.err.find(bad.expected) != std::string::npos);
  }
}

// The iteration time `ppsim simulate` gives a plan JSON of `model` on `cluster`.
double simulated_seconds(const std::string& model, const std::string& cluster,
                         const nlohmann::json& plan) {
  testing::CommandResult simulated = run_ppsim("simulate --model " + model + " --cluster " +
                                               cluster + " --json --plan '" + plan.dump() + "'");
  INFO(simulated.err);
  REQUIRE(simulated.exit_code == 0);
  return nlohmann::json::parse(simulated.out)["iteration_time_s"].get<double>();
}

// The same for tiny-mla-moe on two DGX H100 nodes.
double simulated_mla_moe_seconds(const nlohmann::json& plan) {
  return simulated_seconds("tests/data/models/tiny-mla-moe.json", "dgx-h100:2", plan);
}

// The "plans" of `ppsim plan ARGUMENTS --top 2 --json`, which must list two.
nlohmann::json top_two_plans(const std::string& arguments) {
  testing::CommandResult result = run_ppsim("plan " + arguments + " --top 2 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  nlohmann::json plans = nlohmann::json::parse(result.out)["plans"];
  REQUIRE(plans.size() == 2);
  return plans;
}

TEST_CASE("CLI plan: --cuda-graphs sets every plan's capture, and simulate agrees") {
  const nlohmann::json plans =
      top_two_plans("--model tests/data/models/tiny-mla-moe.json --cluster dgx-h100:2 "
                    "--global-batch 64 --cuda-graphs full-iteration");
  for (const nlohmann::json& plan : plans) CHECK(plan["plan"]["cuda_graphs"] == "full-iteration");
  CHECK(simulated_mla_moe_seconds(plans[0]["plan"]) ==
        Approx(plans[0]["iteration_time_s"].get<double>()));
  // The same plan launched eagerly pays the host's issue time and per-task dispatch.
  nlohmann::json eager = plans[0]["plan"];
  eager.erase("cuda_graphs");
  CHECK(simulated_mla_moe_seconds(eager) > plans[0]["iteration_time_s"].get<double>());
}

TEST_CASE("CLI plan: --precision sets every plan's GEMM precision, and simulate agrees") {
  auto best = [](const std::string& precision) {
    testing::CommandResult result = run_ppsim(
        "plan --model llama3-8b --cluster dgx-b200:1 --global-batch 64 --top 1 --json "
        "--precision " + precision);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out)["plans"][0];
  };
  const nlohmann::json nvfp4 = best("nvfp4");
  const nlohmann::json bf16 = best("bf16");
  CHECK(nvfp4["plan"]["precision"] == "nvfp4");
  CHECK(bf16["plan"]["precision"] == "bf16");
  // FP4 GEMMs at 9 against 2.25 PFLOP/s: the best nvfp4 plan is faster.
  CHECK(nvfp4["iteration_time_s"].get<double>() < bf16["iteration_time_s"].get<double>());
  CHECK(simulated_seconds("llama3-8b", "dgx-b200:1", nvfp4["plan"]) ==
        Approx(nvfp4["iteration_time_s"].get<double>()));
}

TEST_CASE("CLI plan: --fp8-recipe sets every fp8 plan's recipe, and simulate agrees") {
  const nlohmann::json plans = top_two_plans(
      "--model llama3-8b --cluster dgx-b200:1 --global-batch 64 --precision fp8 "
      "--fp8-recipe mxfp8");
  for (const nlohmann::json& entry : plans) CHECK(entry["plan"]["fp8_recipe"] == "mxfp8");
  CHECK(simulated_seconds("llama3-8b", "dgx-b200:1", plans[0]["plan"]) ==
        Approx(plans[0]["iteration_time_s"].get<double>()));
}

TEST_CASE("CLI plan: --grad-reduce-in-fp32 false keeps bf16 gradients, and simulate agrees") {
  // Llama 3 8B on 16 GPUs over two nodes: half the gradient bytes are half the memory and half
  // the data-parallel reduction.
  auto best = [](const std::string& extra) {
    testing::CommandResult result = run_ppsim(
        "plan --model llama3-8b --cluster dgx-h100:2 --global-batch 64 --top 1 --json" + extra);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out)["plans"][0];
  };
  const nlohmann::json half = best(" --grad-reduce-in-fp32 false");
  const nlohmann::json whole = best("");
  CHECK(half["plan"]["grad_reduce_in_fp32"] == false);
  CHECK_FALSE(whole["plan"].contains("grad_reduce_in_fp32"));
  CHECK(half["iteration_time_s"].get<double>() <= whole["iteration_time_s"].get<double>());
  CHECK(simulated_seconds("llama3-8b", "dgx-h100:2", half["plan"]) ==
        Approx(half["iteration_time_s"].get<double>()));
}

TEST_CASE("CLI plan: --tp-comm-overlap sets every sequence-parallel plan's overlap") {
  // Llama 3 70B on four DGX H100s under torchtitan: async TP (off by default) makes the tp 8
  // plans faster, so with it the best plan changes; the best plan simulates as ranked.
  auto plans = [](const std::string& extra) {
    testing::CommandResult result =
        run_ppsim("plan --model llama3-70b --cluster dgx-h100:4 --global-batch 64 --seq-len 8192 "
                  "--runtime torchtitan --top 20 --json" + extra);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out)["plans"];
  };
  const nlohmann::json vanilla = plans("");
  const nlohmann::json async = plans(" --tp-comm-overlap on");
  int overlapped = 0;
  for (const nlohmann::json& entry : async) {
    const nlohmann::json& plan = entry["plan"];
    INFO(plan.dump());
    const bool sp = plan.value("sequence_parallel", false);
    CHECK(plan.value("tp_comm_overlap", false) == sp);
    overlapped += sp ? 1 : 0;
  }
  CHECK(overlapped > 0);
  for (const nlohmann::json& entry : vanilla) {
    CHECK_FALSE(entry["plan"].contains("tp_comm_overlap"));
  }
  CHECK(async[0]["iteration_time_s"].get<double>() < vanilla[0]["iteration_time_s"].get<double>());
  CHECK(simulated_seconds("llama3-70b", "dgx-h100:4", async[0]["plan"]) ==
        Approx(async[0]["iteration_time_s"].get<double>()));
  // Off under megatron-core (whose default is on) writes the key false.
  testing::CommandResult off = run_ppsim(
      "plan --model llama3-70b --cluster dgx-h100:4 --global-batch 64 --seq-len 8192 --top 5 "
      "--json --tp-comm-overlap off");
  REQUIRE(off.exit_code == 0);
  const nlohmann::json off_plans = nlohmann::json::parse(off.out)["plans"];
  for (const nlohmann::json& entry : off_plans) {
    const nlohmann::json& plan = entry["plan"];
    if (plan.value("sequence_parallel", false)) CHECK(plan["tp_comm_overlap"] == false);
  }
}

TEST_CASE("CLI plan: activation offload is searched where pp = 1 does not fit, and simulate agrees") {
  // Llama 3 8B at 16K on one DGX H100: pp = 1 plans without recompute need host memory for some
  // layers' activations. Each offloaded plan listed runs as is in simulate, which agrees.
  auto plans = [](const std::string& extra) {
    testing::CommandResult result =
        run_ppsim("plan --model llama3-8b --cluster dgx-h100:1 --global-batch 16 --seq-len 16384 "
                  "--top 60 --json" + extra);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out)["plans"];
  };
  int offloaded = 0;
  for (const nlohmann::json& entry : plans("")) {
    const nlohmann::json& plan = entry["plan"];
    if (!plan.contains("activation_offload_layers")) continue;
    INFO(plan.dump());
    CHECK(plan["pp"] == 1);
    CHECK(plan["recompute"] == "none");
    CHECK(plan["activation_offload_layers"].get<int>() >= 1);
    if (offloaded++ == 0) {
      CHECK(simulated_seconds("llama3-8b", "dgx-h100:1", plan) ==
            Approx(entry["iteration_time_s"].get<double>()));
    }
  }
  CHECK(offloaded > 0);
  for (const nlohmann::json& entry : plans(" --activation-offload off")) {
    CHECK_FALSE(entry["plan"].contains("activation_offload_layers"));
  }
}

TEST_CASE("CLI plan: --recompute-modules sets what selective plans re-run, and simulate agrees") {
  testing::CommandResult result = run_ppsim(
      "plan --model tests/data/models/tiny-mla-moe.json --cluster dgx-h100:2 --global-batch 64 "
      "--top 50 --json --recompute-modules mla_up_proj,moe_act,layernorm");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json plans = nlohmann::json::parse(result.out)["plans"];
  int selective = 0;
  for (const nlohmann::json& entry : plans) {
    const nlohmann::json& plan = entry["plan"];
    if (plan["recompute"] != "selective") {
      CHECK_FALSE(plan.contains("recompute_modules"));
      continue;
    }
    ++selective;
    CHECK(plan["recompute_modules"] ==
          nlohmann::json::array({"moe_act", "layernorm", "mla_up_proj"}));
    if (selective == 1) {
      CHECK(simulated_mla_moe_seconds(plan) == Approx(entry["iteration_time_s"].get<double>()));
    }
  }
  CHECK(selective > 0);
}

TEST_CASE("CLI plan: --moe-dispatcher sets every expert-parallel plan's dispatcher") {
  // An MLA MoE on two DGX H100 nodes: the best plans use ep > 1, each with DeepEP, and the
  // plan JSON runs as is in simulate.
  testing::CommandResult result =
      run_ppsim("plan --model tests/data/models/tiny-mla-moe.json --cluster dgx-h100:2 "
                "--global-batch 64 --moe-dispatcher deepep --top 3 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json plans = nlohmann::json::parse(result.out)["plans"];
  REQUIRE(plans.size() == 3);
  for (const nlohmann::json& plan : plans) {
    const int64_t ep = plan["plan"].value("ep", 1);
    INFO(plan["plan"].dump());
    if (ep > 1) {
      CHECK(plan["plan"]["moe_dispatcher"] == "deepep");
    } else {
      CHECK_FALSE(plan["plan"].contains("moe_dispatcher"));
    }
  }
  CHECK(plans[0]["plan"].value("ep", 1) > 1);
  CHECK(simulated_mla_moe_seconds(plans[0]["plan"]) ==
        Approx(plans[0]["iteration_time_s"].get<double>()));
}

TEST_CASE("CLI plan: --moe-a2a-overlap off,on searches both and the faster one wins") {
  // Ranked by step time alone (--min-gain 0): the joint search's best is the better of the two
  // single ones, to the byte, and its list holds expert-parallel plans with and without it.
  const std::string search =
      "plan --model tests/data/models/tiny-mla-moe.json --cluster dgx-h100:2 --global-batch 64 "
      "--top 20 --json --min-gain 0 --moe-a2a-overlap ";
  double best_single = 0;
  for (const char* setting : {"off", "on"}) {
    testing::CommandResult single = run_ppsim(search + setting);
    INFO(single.err);
    REQUIRE(single.exit_code == 0);
    const nlohmann::json plans = nlohmann::json::parse(single.out)["plans"];
    REQUIRE(!plans.empty());
    for (const nlohmann::json& plan : plans) {
      INFO(plan["plan"].dump());
      const bool overlapped = plan["plan"].value("moe_a2a_overlap", false);
      CHECK(overlapped == (std::string(setting) == "on" && plan["plan"].value("ep", 1) > 1));
    }
    const double seconds = plans[0]["iteration_time_s"].get<double>();
    if (best_single == 0 || seconds < best_single) best_single = seconds;
  }
  testing::CommandResult joint = run_ppsim(search + "off,on");
  INFO(joint.err);
  REQUIRE(joint.exit_code == 0);
  const nlohmann::json plans = nlohmann::json::parse(joint.out)["plans"];
  REQUIRE(!plans.empty());
  CHECK(plans[0]["iteration_time_s"].get<double>() == best_single);
  std::set<bool> listed;
  for (const nlohmann::json& plan : plans) {
    if (plan["plan"].value("ep", 1) > 1) {
      listed.insert(plan["plan"].value("moe_a2a_overlap", false));
    }
  }
  CHECK(listed.size() == 2);
  CHECK(simulated_mla_moe_seconds(plans[0]["plan"]) ==
        Approx(plans[0]["iteration_time_s"].get<double>()));
}

TEST_CASE("CLI plan: several --moe-dispatcher values are searched and the best one wins") {
  // The same search with each dispatcher alone and with all three: the joint search's best
  // is the best of the three single ones, to the byte of its step time, and it lists
  // expert-parallel plans of more than one dispatcher.
  const std::string search =
      "plan --model tests/data/models/tiny-mla-moe.json --cluster dgx-h100:2 --global-batch 64 "
      "--top 20 --json --moe-dispatcher ";
  double best_single = 0;
  std::string best_dispatcher;
  for (const char* dispatcher : {"alltoall", "deepep", "hybridep"}) {
    testing::CommandResult single = run_ppsim(search + dispatcher);
    INFO(single.err);
    REQUIRE(single.exit_code == 0);
    const nlohmann::json best = nlohmann::json::parse(single.out)["plans"][0];
    const double seconds = best["iteration_time_s"].get<double>();
    if (best_dispatcher.empty() || seconds < best_single) {
      best_single = seconds;
      best_dispatcher = best["plan"].value("moe_dispatcher", "alltoall");
    }
  }
  testing::CommandResult joint = run_ppsim(search + "alltoall,deepep,hybridep");
  INFO(joint.err);
  REQUIRE(joint.exit_code == 0);
  const nlohmann::json plans = nlohmann::json::parse(joint.out)["plans"];
  REQUIRE(!plans.empty());
  CHECK(plans[0]["iteration_time_s"].get<double>() == best_single);
  CHECK(plans[0]["plan"].value("moe_dispatcher", "alltoall") == best_dispatcher);
  std::set<std::string> listed;
  for (const nlohmann::json& plan : plans) {
    if (plan["plan"].value("ep", 1) > 1) {
      listed.insert(plan["plan"].value("moe_dispatcher", "alltoall"));
    }
  }
  CHECK(listed.size() >= 2);
}

TEST_CASE("CLI plan: --emit writes the best plan's launcher file") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "ppsim_cli_plan_emit";
  fs::remove_all(dir);
  testing::CommandResult result =
      run_ppsim(std::string(kSmallPlan) + " --emit megatron --out " + dir.string());
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  fs::path script = dir / "megatron_launch.sh";
  CHECK(fs::is_regular_file(script));
  CHECK(result.out.find("# wrote " + script.string()) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("CLI plan: several --gpus counts rank plans across them; the best is the better one") {
  const std::string base =
      "plan --model llama3-8b --cluster dgx-h100:2 --global-batch 32 --train-tokens 2B "
      "--objective time-to-train --top 5 --json --gpus ";
  auto run = [&base](const std::string& gpus) {
    testing::CommandResult result = run_ppsim(base + gpus);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out);
  };
  nlohmann::json both = run("16,8");
  CHECK(both["gpu_counts"] == nlohmann::json::array({8, 16}));  // Sorted, whatever the order typed.
  CHECK(both["gpus"] == 16);
  for (const nlohmann::json& entry : both["plans"]) {
    const nlohmann::json& plan = entry["plan"];
    int64_t cp = plan.value("cp", int64_t{1});
    CHECK(entry["gpus"] == plan["tp"].get<int64_t>() * plan["pp"].get<int64_t>() *
                               plan["dp"].get<int64_t>() * cp);
  }
  // The merged search's best is the better of the two searches' bests, by the objective.
  double eight = run("8")["plans"][0]["objective"].get<double>();
  double sixteen = run("16")["plans"][0]["objective"].get<double>();
  CHECK(both["plans"][0]["objective"].get<double>() == std::min(eight, sixteen));
  CHECK(both["plans"][0]["gpus"] == (eight < sixteen ? 8 : 16));
  testing::CommandResult too_many = run_ppsim(base + "8,32");
  CHECK(too_many.exit_code == 2);
  CHECK_THAT(too_many.err, Catch::Contains("--gpus: 32 GPUs requested but cluster"));
}

TEST_CASE("CLI plan and simulate: the runtime is an input both read the same way") {
  const std::string base = "--model llama3-8b --cluster dgx-h100-1 ";
  testing::CommandResult titan =
      run_ppsim("plan " + base + "--global-batch 64 --top 1 --runtime torchtitan --json");
  REQUIRE(titan.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(titan.out);
  const nlohmann::json& best = json["plans"][0]["plan"];
  CHECK(best["runtime"] == "torchtitan");
  // The best plan, run by simulate with its runtime, gives the planner's step time; the same
  // plan on megatron-core (fused attention, its own overheads) another.
  testing::CommandResult same = run_ppsim("simulate " + base + "--json --plan '" + best.dump() + "'");
  REQUIRE(same.exit_code == 0);
  double planned = json["plans"][0]["iteration_time_s"].get<double>();
  double simulated = nlohmann::json::parse(same.out)["iteration_time_s"].get<double>();
  CHECK(simulated == Approx(planned).epsilon(1e-9));
  nlohmann::json core_plan = best;
  core_plan["runtime"] = "megatron-core";
  testing::CommandResult core =
      run_ppsim("simulate " + base + "--json --plan '" + core_plan.dump() + "'");
  REQUIRE(core.exit_code == 0);
  CHECK(nlohmann::json::parse(core.out)["iteration_time_s"].get<double>() != simulated);

  testing::CommandResult bad = run_ppsim("plan " + base + "--global-batch 64 --runtime torchtitn");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("did you mean 'torchtitan'"));
  // A misspelt runtime is named as such, even beside --emit (checked before the format).
  testing::CommandResult emit = run_ppsim("plan " + base +
                                          "--global-batch 64 --runtime torchtitn --emit torchtitan "
                                          "--out /tmp/ppsim_runtime_emit");
  CHECK(emit.exit_code == 2);
  CHECK_THAT(emit.err, Catch::Contains("--runtime: unknown runtime 'torchtitn'"));
}

}  // namespace
}  // namespace ppsim
