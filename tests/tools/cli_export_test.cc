// `ppsim export` from the command line: output on stdout or in a file, what a launcher cannot
// express as warnings on stderr, bad input as exit status 2.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("ppsim export: a plan the runtime cannot run is refused, exit 2, naming the feature") {
  testing::CommandResult result = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format megatron "
      "--plan tp=2,pp=4,dp=1,mbs=1,gbs=16,schedule=zb-h1");
  INFO(result.err);
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(contains(result.err, "ppsim: error: --plan: runtime megatron-core cannot run pipeline "
                             "schedule zb-h1 (it runs 1f1b, interleaved-1f1b)"));

  testing::CommandResult titan = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format torchtitan "
      "--plan tp=8,mbs=1,gbs=16,sequence_parallel=true,offload_optimizer=true,"
      "runtime=torchtitan");
  CHECK(titan.exit_code == 2);
  CHECK(contains(titan.err, "cannot run optimizer CPU offload without FSDP sharding"));

  // torchtitan's selective recompute is its op policy: a module list is refused.
  testing::CommandResult modules = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format torchtitan "
      "--plan dp=8,mbs=1,gbs=8,recompute_modules=core_attn,runtime=torchtitan");
  CHECK(modules.exit_code == 2);
  CHECK(contains(modules.err, "runtime torchtitan cannot run selective recompute of core_attn "
                              "(recompute_modules; its selective recompute is its op policy"));

  testing::CommandResult deepspeed = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format deepspeed "
      "--plan dp=8,mbs=1,gbs=16,zero_stage=1,offload=0.5,runtime=deepspeed");
  CHECK(deepspeed.exit_code == 2);
  CHECK(contains(deepspeed.err, "partial offload needs ZeRO-3"));
}

TEST_CASE("ppsim plan: the quick start's best plan exports for its runtime") {
  testing::CommandResult plan = run_ppsim(
      "plan --top 1 --emit megatron --out /tmp/ppsim_quick_start_emit");
  INFO(plan.err);
  CHECK(plan.exit_code == 0);
  CHECK(contains(plan.out, "# runtime  megatron-core (only plans it runs); memory margin 5%"));
  CHECK((contains(plan.out, "schedule=1f1b") || contains(plan.out, "schedule=interleaved-1f1b")));
  // --runtime any searches every schedule, so it has no launcher to emit for.
  testing::CommandResult any = run_ppsim(
      "plan --model llama3-8b --cluster dgx-h100-1 --global-batch 16 --runtime any --emit "
      "megatron --out /tmp/ppsim_quick_start_emit");
  CHECK(any.exit_code == 2);
  CHECK(contains(any.err, "--runtime any ranks plans no one launcher runs"));
  testing::CommandResult margin = run_ppsim("plan --memory-margin 100");
  CHECK(margin.exit_code == 2);
  CHECK(contains(margin.err, "--memory-margin: 100 is not a percentage in [0, 100)"));
  testing::CommandResult gain = run_ppsim("plan --min-gain -1");
  CHECK(gain.exit_code == 2);
  testing::CommandResult bad = run_ppsim("plan --runtime anny");
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.err, "did you mean 'any'"));
}

TEST_CASE("ppsim export: unequal per-replica batch shares are a warning in every format") {
  for (const char* format : {"megatron", "deepspeed", "torchtitan"}) {
    const std::string runtime = std::string(format) == "megatron" ? "megatron-core" : format;
    // torchtitan runs tp only with FSDP and sequence parallelism.
    const std::string knobs =
        std::string(format) == "torchtitan" ? ",sequence_parallel=true,zero_stage=2" : "";
    testing::CommandResult result = run_ppsim(
        std::string("export --model llama3-8b --cluster mixed-a100-h100 --format ") + format +
        " --plan tp=8,pp=1,dp=8,mbs=1,gbs=64,rmb=5:5:5:5:11:11:11:11,runtime=" + runtime + knobs);
    INFO(format << ": " << result.err);
    CHECK(result.exit_code == 0);
    CHECK(contains(result.err, "ppsim: warning: the plan gives data-parallel replicas unequal "
                               "shares of the global batch (replica_microbatches "
                               "5:5:5:5:11:11:11:11)"));
    // In the file too, where the format has comments (DeepSpeed's JSON has none).
    if (std::string(format) != "deepspeed") {
      CHECK(contains(result.out, "unequal shares of the global batch"));
    }
  }
}

TEST_CASE("ppsim simulate: malformed replica_microbatches exit 2 naming the key") {
  const std::string base = "simulate --model llama3-8b --cluster mixed-a100-h100 --plan ";
  testing::CommandResult sum = run_ppsim(base + "tp=8,dp=8,gbs=64,rmb=8:8:8:8:8:8:8:7");
  CHECK(sum.exit_code == 2);
  CHECK(contains(sum.err, "replica_microbatches add up to 63 but global_batch_size / "
                          "micro_batch_size = 64 / 1 = 64"));
  testing::CommandResult length = run_ppsim(base + "tp=8,dp=8,gbs=64,rmb=32:32");
  CHECK(length.exit_code == 2);
  CHECK(contains(length.err, "replica_microbatches has 2 entries but dp=8"));
  testing::CommandResult zero = run_ppsim(base + "tp=8,dp=8,gbs=64,rmb=0:8:8:8:8:8:8:16");
  CHECK(zero.exit_code == 2);
  CHECK(contains(zero.err, "--plan: /rmb/0: expected an integer in [1, 2147483647], got 0"));
  testing::CommandResult json = run_ppsim(
      base + "'{\"tp\": 8, \"dp\": 8, \"gbs\": 64, \"replica_microbatches\": [8, 8]}'");
  CHECK(json.exit_code == 2);
  CHECK(contains(json.err, "replica_microbatches has 2 entries but dp=8"));
}

TEST_CASE("ppsim export: a plan every launcher expresses prints no warning") {
  testing::CommandResult result = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format deepspeed "
      "--plan dp=8,mbs=1,gbs=64,zero_stage=1,runtime=deepspeed");
  CHECK(result.exit_code == 0);
  CHECK(!contains(result.err, "warning"));
  // The launch line and batch arithmetic are notes on stderr; the JSON holds only DeepSpeed keys.
  CHECK(contains(result.err, "ppsim: note: launch: deepspeed --num_gpus 8 train.py"));
  CHECK(contains(result.out, "\"train_batch_size\": 64"));
  CHECK(!contains(result.out, "_ppsim_comment"));
}

TEST_CASE("ppsim export: -o writes the same text to a file") {
  const std::string arguments =
      "export --model llama3-8b --cluster dgx-h100-1 --format megatron "
      "--plan tp=8,mbs=1,gbs=8";
  testing::CommandResult to_stdout = run_ppsim(arguments);
  char path[] = "/tmp/ppsim_export_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fclose(fdopen(fd, "w"));
  testing::CommandResult to_file = run_ppsim(arguments + " -o " + path);
  CHECK(to_file.exit_code == 0);
  CHECK(to_file.out.empty());
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  CHECK(text.str() == to_stdout.out);
  struct stat info {};
  REQUIRE(stat(path, &info) == 0);
  CHECK((info.st_mode & S_IXUSR) != 0);  // The Megatron script is executable.
  std::remove(path);
}

TEST_CASE("ppsim export: bad input exits 2 with a message that says how to fix it") {
  testing::CommandResult format = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format megatorn --plan tp=8,gbs=8");
  CHECK(format.exit_code == 2);
  CHECK(format.out.empty());
  CHECK(contains(format.err,
                 "ppsim: error: --format: unknown launcher format 'megatorn'; expected one of "
                 "megatron, deepspeed, torchtitan (did you mean 'megatron'?)"));

  testing::CommandResult plan = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format deepspeed --plan tp=3,gbs=8");
  CHECK(plan.exit_code == 2);
  CHECK(contains(plan.err, "ppsim: error: --plan: "));

  testing::CommandResult output = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format deepspeed "
      "--plan tp=8,gbs=8,runtime=deepspeed -o /nonexistent-folder/ds_config.json");
  CHECK(output.exit_code == 2);
  CHECK(contains(output.err,
                 "ppsim: error: --output: cannot write '/nonexistent-folder/ds_config.json'"));

  // A file runs its launcher's runtime: a plan simulated under another is refused, saying why.
  testing::CommandResult runtime = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format deepspeed --plan tp=8,gbs=8");
  CHECK(runtime.exit_code == 2);
  CHECK(runtime.out.empty());
  CHECK(contains(runtime.err, "ppsim: error: --plan: /runtime: the plan runs on runtime "
                              "megatron-core"));
  CHECK(contains(runtime.err, "set runtime=deepspeed"));
  testing::CommandResult fsdp = run_ppsim(
      "export --model llama3-8b --cluster dgx-h100-1 --format megatron "
      "--plan dp=8,gbs=8,zero_stage=3,runtime=pytorch-fsdp");
  CHECK(fsdp.exit_code == 2);
  CHECK(contains(fsdp.err, "ppsim writes no launcher file for pytorch-fsdp"));
  // megatron writes megatron-lm plans too.
  CHECK(run_ppsim("export --model llama3-8b --cluster dgx-h100-1 --format megatron "
                  "--plan tp=8,gbs=8,runtime=megatron-lm")
            .exit_code == 0);
  testing::CommandResult emit = run_ppsim(
      "plan --model llama3-8b --cluster dgx-h100-1 --global-batch 8 --emit torchtitan --out "
      "/tmp/ppsim_emit_runtime");
  CHECK(emit.exit_code == 2);
  CHECK(contains(emit.err, "--emit: "));
  CHECK(contains(emit.err, "plan --runtime torchtitan"));
}

}  // namespace
}  // namespace ppsim
