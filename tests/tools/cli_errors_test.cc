// Malformed and impossible inputs: each exits with status 2 and a message that names the
// problem and where it is; none crashes.
#include <catch2/catch.hpp>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::run_ppsim;

struct BadInput {
  const char* arguments;
  const char* expected;  // A part of stderr that names the problem and where.
};

const BadInput kBadInputs[] = {
    // Bad JSON, wrong types, negative sizes, unknown keys: file and JSON path.
    {"memory --model tests/data/bad/model_syntax.json --cluster dgx-h100-1 --plan gbs=8",
     "tests/data/bad/model_syntax.json: invalid JSON at line 3, column 19: syntax error"},
    {"memory --model tests/data/bad/model_wrong_type.json --cluster dgx-h100-1 --plan gbs=8",
     "model_wrong_type.json: /hidden_size: expected an integer, got a string \"256\""},
    {"memory --model tests/data/bad/model_negative.json --cluster dgx-h100-1 --plan gbs=8",
     "model_negative.json: /num_layers: expected an integer in [1, 65536], got -4"},
    {"memory --model tests/data/bad/model_unknown_key.json --cluster dgx-h100-1 --plan gbs=8",
     "model_unknown_key.json: /num_layer: unknown key 'num_layer' (did you mean 'num_layers'?)"},
    {"memory --model tests/data/bad/model_missing_key.json --cluster dgx-h100-1 --plan gbs=8",
     "model_missing_key.json: /vocab_size: required key is missing (expected an integer)"},
    {"memory --model llama3-8b --cluster tests/data/bad/cluster_unknown_gpu.json --plan gbs=8",
     "cluster_unknown_gpu.json: /nodes/0/gpu: unknown GPU 'H100-SXM'"},
    {"memory --model llama3-8b --cluster tests/data/bad/cluster_negative_bandwidth.json --plan "
     "gbs=8",
     "cluster_negative_bandwidth.json: /nodes/0/intra_node/bandwidth_GBps: expected a number"},
    {"memory --model llama3-8b --cluster tests/data/bad/cluster_unknown_key.json --plan gbs=8",
     "cluster_unknown_key.json: /nodes/0/nic/speed: unknown key 'speed'"},
    {"memory --model llama3-8b --cluster dgx-h100-1 --plan tests/data/bad/plan_wrong_type.json",
     "plan_wrong_type.json: /tp: expected an integer, got a string \"8\""},
    {"memory --model llama3-8b --cluster dgx-h100-1 --plan tp=8,micro_batch=2,gbs=8",
     "--plan: /micro_batch: unknown key 'micro_batch' (did you mean 'micro_batch_size'?)"},
    {"memory --model llama3-8b --cluster dgx-h100-1 --plan tp=8,gbs=8,schedule=onefoneb",
     "--plan: /schedule: unknown value 'onefoneb'"},
    {"memory --model llama3-8b --cluster dgx-h100-1 --plan tp=-2,gbs=8",
     "--plan: /tp: expected an integer in [1, 16777216], got -2"},
    // Impossible plans: the reason.
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=2,gbs=64",
     "tp*pp*dp*cp = 8*4*2*1 = 64 GPUs, but cluster 'dgx-h100-4' has 32"},
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan tp=16,dp=2,gbs=64",
     "tp=16 is more than the 8 GPUs per node"},
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan tp=3,gbs=64",
     "tp=3 does not divide the 32 attention heads of llama3-8b"},
    {"memory --model llama2-70b --cluster dgx-h100-4 --plan tp=2,pp=2,dp=4,mbs=2,gbs=12",
     "global batch 12 is not divisible by dp*mbs = 4*2 = 8"},
    {"memory --model gpt3-1.3b --cluster dgx-h100-32 --plan pp=25,dp=1,gbs=64",
     "pp=25 stages but gpt3-1.3b has only 24 layers"},
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan "
     "pp=4,vpp=9,gbs=64,schedule=interleaved-1f1b",
     "stage 1 has 8 layers for its 9 chunks (vpp)"},
    {"memory --model mixtral-8x7b --cluster dgx-h100-4 --plan tp=2,dp=12,ep=3,gbs=48",
     "ep=3 does not divide the 8 experts of mixtral-8x7b"},
    // Unknown names and files.
    {"memory --model llama3-80b --cluster dgx-h100-4 --plan gbs=8",
     "'llama3-80b' is neither a file nor a zoo model (did you mean 'llama3-70b'?)"},
    {"memory --model llama3-8b --cluster dgx-h100-5 --plan gbs=8",
     "'dgx-h100-5' is neither a file, a zoo cluster (did you mean 'dgx-h100-"},
    {"inspect no/such/model.json", "'no/such/model.json' is neither a file nor a zoo model"},
    // The op table's degrees are checked as a plan's, naming the flag.
    {"inspect nemotron-3-nano-30b-a3b --tp 16",
     "--tp: tp=16 must divide the 64 Mamba heads and 8 groups"},
    {"inspect nemotron-3-nano-30b-a3b --cp 3",
     "--cp: cp=3 must divide the 64 Mamba heads of each tp rank"},
    {"inspect llama3-8b --ep 2", "--ep: ep=2 but llama3-8b has no experts"},
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan ''", "--plan: the plan is empty"},
    {"memory --model llama3-8b --cluster dgx-h100-4 --plan gbs=8 --bogus", "--bogus"},
    {"simulate --model llama3-8b --cluster dgx-h100-1 --plan tp=8,gbs=8,offload=1.5",
     "--plan: /offload: expected a number"},
};

TEST_CASE("CLI: bad input exits 2 with a message naming the problem and where") {
  for (const BadInput& bad : kBadInputs) {
    INFO("ppsim " << bad.arguments);
    testing::CommandResult result = run_ppsim(bad.arguments);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == 2);
    CHECK(result.err.rfind("ppsim: error: ", 0) == 0);
    CHECK(result.err.find(bad.expected) != std::string::npos);
  }
  CHECK(std::size(kBadInputs) >= 20);
}

TEST_CASE("CLI: every subcommand has --help with an example") {
  for (const char* subcommand : {"inspect", "memory", "plan"}) {
    INFO(subcommand);
    testing::CommandResult result = run_ppsim(std::string(subcommand) + " --help");
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("Example") != std::string::npos);
  }
}

}  // namespace
}  // namespace ppsim
