// PublicRun: one row of a published-runs file (the schema of public-runs.csv, whose README
// explains the columns) turned into what ppsim simulates: a ModelSpec, a ClusterSpec and a Plan,
// plus the defaults it had to assume and, when it cannot be predicted, the reason.
//
// How the text of a row becomes specs (every assumption is listed in PublicRun::defaults):
// - Model: layers, hidden, ffn_hidden, heads, kv_heads, vocab, seq_len and the MoE columns.
//   The architecture family comes from the model name: Llama/Mistral/Mixtral/Qwen/DeepSeek
//   names are Llama-style (SwiGLU, RMSNorm, rope, untied, no biases); MPT is MPT-style (GeLU,
//   LayerNorm, learned positions and no rotary op, tied, no biases: llm-foundry's pretrain
//   mpt yamls, which its benchmark driver runs, set no ALiBi, and MPTConfig defaults to
//   learned_pos_emb=True); GPT, MT-NLG, BLOOM and OPT names
//   are GPT-style (GeLU, LayerNorm, learned positions, tied, biases: Megatron-LM's GPT model).
//   Any other name is GPT-style when ffn_hidden is empty or 4*hidden, else Llama-style.
//   Missing ffn_hidden is 4*hidden; missing kv_heads is heads (MHA); a missing vocab is the
//   framework's tokenizer (below).
// - Cluster: gpu_type text -> catalog GPU (A100 40/80GB, H100 SXM/PCIe/NVL, H200, B200, V100,
//   L4, L40S, MI300X); SXM unless the text says PCIe/NVL. A capacity in the text that differs
//   from the catalog's (e.g. "H100 SXM ~95GB") replaces the GPU memory. Nodes hold 8 GPUs
//   (HGX/DGX boards), or num_gpus when fewer; NVLink per the catalog, 2.5 us per hop; NIC
//   from the interconnect text: "8x200Gb/s" (8 NICs of 200 Gb/s per node), "1600 Gbps
//   node-node" (a node total), "400Gb/s per GPU", or HDR/NDR/EDR/XDR names; 5 us latency.
//   Unstated: the DGX reference NICs, 8x200 Gb/s HDR for A100/V100 and 8x400 Gb/s NDR for
//   H100/H200/B200/MI300X (REFERENCE.md 7). The NVLink and NIC latencies follow
//   configs/clusters/nodes/dgx-a100.json (NCCL's per-hop latencies, REFERENCE.md 6).
// - Plan: tp, pp, dp, cp, ep, vp, micro_batch, global_batch (dp = num_gpus/(tp*pp*cp) when
//   empty; micro_batch = global_batch/(dp*grad_accum) when empty), the schedule as written
//   ("1F1B", "interleaved 1F1B", "Zero Bubble auto-searched ... p*M_B" = ZB-1p -> zb-1p,
//   "... 2p*M_B" = ZB-2p -> zb-2p (the searched schedules), "ZB-H1" -> zb-h1, "ZB-H2" -> zb-h2,
//   "ZB-V", "GPipe", "DualPipeV"; empty or "n/a": 1f1b), recompute text
//   (none / selective (attention core, torchtitan's op- and layer-SAC too) / full),
//   fsdp_zero_distopt text (FULL_SHARD, FSDP2, ZeRO-3 -> 3; SHARD_GRAD_OP, ZeRO-2 -> 2;
//   distributed optimizer, ZeRO-1 -> 1; none, DDP, "DDP (FSDP=0)" -> 0), precision text (fp8/Float8 -> fp8, fp16 ->
//   fp16, bf16 or unstated 16-bit -> bf16), sequence_parallel yes/no.
// - Framework defaults, from the framework column (Megatron-LM and its forks such as the Zero
//   Bubble repo; torchtitan; MosaicML llm-foundry/Composer; anything else is "unknown"):
//     vocab      Megatron GPT: 50257 (GPT-2 BPE, the --vocab-file of its GPT examples);
//                torchtitan: 128256 (Llama 3 tokenizer); llm-foundry: 50368 (mpt yamls'
//                vocab_size, GPT-NeoX tokenizer padded).
//     runtime    the plan key `runtime` (spec/runtime.h), which carries the attention kernel
//                and host overheads: Megatron-Core, NeMo, Megatron-Bridge or Transformer
//                Engine named -> megatron-core; DeepSpeed -> deepspeed; torchtitan ->
//                torchtitan; llm-foundry/Composer or another FSDP text -> pytorch-fsdp
//                (attention=triton when the text names Triton); other Megatron-LM texts (and
//                forks such as the Zero Bubble repo) -> megatron-lm (unfused core attention;
//                attention=flash2 when the text names flash);
//                unknown -> megatron-core, noted. So a row simulates exactly as `ppsim
//                simulate` does with the same plan (tests/accuracy/accuracy_test.cc).
//     zero       torchtitan and llm-foundry shard with FSDP (ZeRO-3) when the column is
//                empty; Megatron-LM does not (DDP, zero 0).
//     seq. par.  torchtitan with tp > 1: on (its TP plan shards norms over the sequence);
//                Megatron-LM: off (--sequence-parallel is opt-in).
//     precision  bf16 unless stated (fp16 has the same peak on every supported GPU).
// Rows that cannot be predicted carry the reason: a GPU not in the catalog, an unknown
// schedule, recompute or precision text, a malformed number, a layout ppsim cannot express
// (e.g. interleaving whose chunks differ in size), or a plan that plan_problem rejects.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/spec/cluster_spec.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/spec/model_spec.h"
#include "simulator/spec/plan.h"

namespace ppsim {

// The columns a runs file must have (all of public-runs.csv's model, hardware, plan and target
// columns). Others (source, notes, the published results besides the target) are optional.
const std::vector<std::string>& public_run_columns();

// Throws InputError naming the file and every missing column (with "did you mean" for a close
// column name) when `table` lacks one of public_run_columns().
void check_public_run_columns(const CsvTable& table);

// The framework family a row ran on, for its defaults (above).
enum class Framework { kMegatron, kTorchtitan, kLlmFoundry, kUnknown };

struct PublicRun {
  // Identity, as written.
  int64_t line = 0;          // Line of the row in the file (1-based).
  std::string row_id;        // "row_id" column.
  std::string source_id;     // "source_id", e.g. "S11".
  std::string source;        // "source" (a citation); empty when the column is absent.
  std::string model_name;    // "model".
  std::string gpu_type;      // "gpu_type" text.
  int64_t num_gpus = 0;      // "num_gpus"; 0 when missing or malformed.
  Framework framework = Framework::kUnknown;
  // Published numbers.
  std::optional<double> target_tokens_per_s_per_gpu;  // "target_tokens_per_s_per_gpu".
  std::optional<double> published_memory_gb;          // "mem_gb_per_gpu" (GB as published).
  std::string schedule_text;  // "pipeline_schedule" as written (for schedule comparisons).

  // What to simulate; meaningful only when `reason` is empty.
  ModelSpec model;
  ClusterSpec cluster;
  Plan plan;
  std::vector<std::string> defaults;  // Assumptions made, one sentence each, in order.
  std::string reason;  // Why the row cannot be predicted; empty when it can.

  bool predictable() const { return reason.empty(); }
};

// Reads one record of `table` (whose columns check_public_run_columns accepted). Never throws
// for bad values: they become `reason`.
PublicRun read_public_run(const CsvTable& table, const CsvRecord& record);

// Every record of `table`, in file order. Throws InputError only for missing columns.
std::vector<PublicRun> read_public_runs(const CsvTable& table);

// "megatron-lm", "torchtitan", "llm-foundry", "unknown".
std::string framework_name(Framework framework);

// The catalog GPU a gpu_type text names ("A100 80GB SXM (DGX A100, Selene)" ->
// "A100-SXM-80GB"), or nullopt.
std::optional<std::string> catalog_gpu_for(const std::string& gpu_type);

}  // namespace ppsim
