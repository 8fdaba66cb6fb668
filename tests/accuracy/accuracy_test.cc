// The accuracy pipeline: CSV reading (csv_reader.h), rows to specs (public_run.h), and the
// error summary (accuracy.h), on hand-made text and on three rows of the public file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "simulator/accuracy/accuracy.h"
#include "simulator/accuracy/public_run.h"
#include "simulator/model/chunk_layout.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/csv_reader.h"
#include "simulator/spec/error.h"
#include "simulator/spec/units.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

using testing::test_data;

// The header of public-runs.csv, and a row builder that fills named columns.
const char* kHeader =
    "row_id,source_id,source,table_or_figure,model,params_b,layers,hidden,ffn_hidden,heads,"
    "kv_heads,vocab,seq_len,moe_experts,moe_topk,moe_ffn_hidden,gpu_type,num_gpus,interconnect,"
    "framework,tp,pp,dp,cp,ep,vp,sequence_parallel,fsdp_zero_distopt,micro_batch,global_batch,"
    "grad_accum,pipeline_schedule,recompute,precision,tflops_per_gpu,mfu_pct,hfu_pct,"
    "tokens_per_s_per_gpu,tokens_per_s_total,samples_per_s_per_gpu,step_time_s,mem_gb_per_gpu,"
    "other_result,flops_formula,notes,target_tokens_per_s_per_gpu,target_basis";

// One record of kHeader's columns with `values` set by name (others empty).
CsvTable one_row(const std::vector<std::pair<std::string, std::string>>& values) {
  CsvTable table = parse_csv(std::string(kHeader) + "\n", "<test>");
  CsvRecord record;
  record.line = 2;
  record.fields.assign(table.columns.size(), "");
  for (const auto& [column, value] : values) {
    record.fields[*table.column_index(column)] = value;
  }
  table.records.push_back(record);
  return table;
}

// A dense Llama-style row on H100s with the given overrides.
std::vector<std::pair<std::string, std::string>> llama_row() {
  return {{"row_id", "7"},          {"source_id", "T1"},       {"model", "Llama 3 8B"},
          {"layers", "32"},         {"hidden", "4096"},        {"ffn_hidden", "14336"},
          {"heads", "32"},          {"kv_heads", "8"},         {"vocab", "128256"},
          {"seq_len", "8192"},      {"gpu_type", "H100 SXM"},  {"num_gpus", "16"},
          {"framework", "torchtitan"}, {"tp", "2"},            {"pp", "1"},
          {"dp", "8"},              {"micro_batch", "1"},      {"global_batch", "32"},
          {"recompute", "full"},    {"precision", "bf16"},     {"target_tokens_per_s_per_gpu", "1000"}};
}

void set(std::vector<std::pair<std::string, std::string>>& row, const std::string& column,
         const std::string& value) {
  for (auto& [name, field] : row) {
    if (name == column) {
      field = value;
      return;
    }
  }
  row.emplace_back(column, value);
}

TEST_CASE("CsvReader: quoted fields hold commas, doubled quotes and line breaks") {
  CsvTable table = parse_csv(
      "\xEF\xBB\xBF" "a,b,c\r\n"
      "1,\"x, y\",\"say \"\"hi\"\"\"\r\n"
      "\n"
      "2,\"two\nlines\",\r\n"
      "3,,last",
      "t.csv");
  REQUIRE(table.columns == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(table.records.size() == 3);
  CHECK(table.records[0].fields == std::vector<std::string>{"1", "x, y", "say \"hi\""});
  CHECK(table.records[0].line == 2);
  CHECK(table.records[1].fields == std::vector<std::string>{"2", "two\nlines", ""});
  CHECK(table.records[1].line == 4);  // The blank line 3 is skipped.
  CHECK(table.records[2].fields == std::vector<std::string>{"3", "", "last"});
  CHECK(table.records[2].line == 6);
  CHECK(table.field(table.records[2], "c") == "last");
  // A CR that ends the text ends the record.
  CHECK(parse_csv("a,b\r\n1,2\r", "t.csv").records.at(0).fields ==
        std::vector<std::string>{"1", "2"});
  CHECK_FALSE(table.column_index("d").has_value());
}

TEST_CASE("CsvReader: malformed text names the file and line") {
  auto message = [](const std::string& text) {
    try {
      parse_csv(text, "runs.csv");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("a,b\n1,\"open\n2,3\n"),
             Catch::Contains("runs.csv: line 2: the quoted field that starts here is never closed"));
  CHECK_THAT(message("a,b\n1,2\n1,2,3\n"),
             Catch::Contains("runs.csv: line 3: 3 fields, but the header has 2 columns"));
  CHECK_THAT(message("a,b\n1,x\"y\n"), Catch::Contains("line 2: a quote inside the unquoted field"));
  CHECK_THAT(message("a,b\n1,\"x\"y\n"), Catch::Contains("line 2: text after the closing quote"));
  CHECK_THAT(message("a,a\n"), Catch::Contains("line 1: column 'a' appears twice"));
  CHECK_THAT(message(""), Catch::Contains("empty CSV"));
}

TEST_CASE("PublicRun: a missing column is an error naming it") {
  std::string header = kHeader;
  header.replace(header.find("kv_heads,"), 9, "kv_head,");
  try {
    check_public_run_columns(parse_csv(header + "\n", "r.csv"));
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK_THAT(error.what(), Catch::Contains("r.csv: line 1: missing column kv_heads"));
    CHECK_THAT(error.what(), Catch::Contains("'kv_head' may be a misspelling of 'kv_heads'"));
  }
}

TEST_CASE("PublicRun: gpu_type texts map to catalog GPUs") {
  CHECK(catalog_gpu_for("A100 80GB SXM (DGX A100, Selene)") == "A100-SXM-80GB");
  CHECK(catalog_gpu_for("A100 SXM 80GB") == "A100-SXM-80GB");
  CHECK(catalog_gpu_for("A100 40GB") == "A100-SXM-40GB");
  CHECK(catalog_gpu_for("H100 80GB") == "H100-SXM-80GB");
  CHECK(catalog_gpu_for("H100 PCIe") == "H100-PCIe-80GB");
  // torchtitan's Grand Teton H100s: HBM2e on the SXM part.
  CHECK(catalog_gpu_for("H100 SXM ~95GB HBM2e, lower TDP") == "H100-SXM-96GB");
  CHECK(catalog_gpu_for("NVIDIA H200 SXM 141GB") == "H200-SXM-141GB");
  CHECK(catalog_gpu_for("B200 (HGX)") == "B200");
  CHECK(catalog_gpu_for("B200 (DGX B200)") == "B200");
  // A GB200 NVL72 rack is not a DGX B200 (72-GPU NVLink domain, other clocks and power).
  CHECK(catalog_gpu_for("GB200 (NVL72)") == "GB200");
  CHECK(catalog_gpu_for("GB300 (NVL72)") == "GB300");
  CHECK(catalog_gpu_for("B300 (DGX B300)") == "B300");
  CHECK_FALSE(catalog_gpu_for("TPU v5p").has_value());
}

TEST_CASE("PublicRun: a Llama row becomes a model, a cluster and a plan") {
  CsvTable table = one_row(llama_row());
  PublicRun run = read_public_run(table, table.records[0]);
  REQUIRE(run.predictable());
  CHECK(run.framework == Framework::kTorchtitan);
  CHECK(run.model.activation == Activation::kSwiglu);
  CHECK(run.model.norm == Norm::kRmsNorm);
  CHECK_FALSE(run.model.tied_embeddings);
  CHECK(run.model.num_kv_heads == 8);
  CHECK(run.model.head_dim == 128);
  const NodeGroup& group = run.cluster.nodes.at(0);
  CHECK(group.gpu.name == "H100-SXM-80GB");
  CHECK(group.count == 2);
  CHECK(group.gpus_per_node == 8);
  // No interconnect text: the DGX H100 reference, 400 Gb/s per GPU, and it says so.
  CHECK(group.nic.per_gpu);
  CHECK(group.nic.link.bandwidth == Approx(gbps_to_bytes_per_s(400)));
  CHECK(run.plan.tp == 2);
  CHECK(run.plan.dp == 8);
  CHECK(run.plan.recompute == Recompute::kFull);
  CHECK(run.plan.zero_stage == 3);  // torchtitan's FSDP when the column is empty.
  CHECK(run.plan.runtime == Runtime::kTorchtitan);
  CHECK(attention_kernel(run.plan) == AttentionKernel::kFlash2);
  bool said_nic = false, said_zero = false;
  for (const std::string& text : run.defaults) {
    said_nic = said_nic || text.find("NIC speed not stated") != std::string::npos;
    said_zero = said_zero || text.find("FSDP full shard") != std::string::npos;
  }
  CHECK(said_nic);
  CHECK(said_zero);
}

TEST_CASE("PublicRun: MPT is LayerNorm, GELU and learned positions: no rotary op") {
  auto row = llama_row();
  set(row, "model", "MPT-7b");
  set(row, "ffn_hidden", "16384");
  set(row, "kv_heads", "32");
  set(row, "framework", "MosaicML Composer + llm-foundry (PyTorch FSDP)");
  CsvTable table = one_row(row);
  PublicRun run = read_public_run(table, table.records[0]);
  CHECK(run.model.norm == Norm::kLayerNorm);
  CHECK(run.model.activation == Activation::kGelu);
  // llm-foundry's pretrain mpt yamls set no ALiBi; MPTConfig's learned_pos_emb defaults on.
  CHECK(run.model.position_embedding == PositionEmbedding::kLearned);
  CHECK(run.model.tied_embeddings);
  const OpList ops = layer_ops(run.model, op_shape(run.plan, run.model), 0);
  CHECK(ops.find("rotary") == nullptr);
  CHECK(ops.find("attention_core") != nullptr);
  CHECK(embedding_ops(run.model, op_shape(run.plan, run.model)).find("position_embedding") !=
        nullptr);
}

TEST_CASE("PublicRun: interconnect texts give the NIC") {
  auto nic_of = [](const std::string& text) {
    auto row = llama_row();
    set(row, "interconnect", text);
    CsvTable table = one_row(row);
    PublicRun run = read_public_run(table, table.records[0]);
    REQUIRE(run.predictable());
    return run.cluster.nodes.at(0).nic;
  };
  NicSpec hdr = nic_of("NVLink/NVSwitch in node; 8x200Gb/s HDR InfiniBand per node");
  CHECK(hdr.per_gpu);
  CHECK(hdr.link.bandwidth == Approx(gbps_to_bytes_per_s(200)));
  NicSpec roce = nic_of("1600 Gbps node-node interconnect (RoCE)");
  CHECK_FALSE(roce.per_gpu);
  CHECK(roce.link.bandwidth == Approx(gbps_to_bytes_per_s(1600)));
  // A count past any node's NICs is not one (it overflowed a cast; public_runs_csv_fuzz).
  NicSpec absurd = nic_of("88888888888888888888888888888888x400Gb/s");
  CHECK(absurd.per_gpu);
  CHECK(absurd.link.bandwidth == Approx(gbps_to_bytes_per_s(400)));
  NicSpec named = nic_of("NDR InfiniBand");
  CHECK(named.per_gpu);
  CHECK(named.link.bandwidth == Approx(gbps_to_bytes_per_s(400)));
}

TEST_CASE("PublicRun: a model name too long for a file name is read, never thrown") {
  // zoo_model_for looks the name up as models/<name>.json; a stat of a name past NAME_MAX threw
  // filesystem_error out of the reader (found by public_runs_csv_fuzz).
  auto row = llama_row();
  set(row, "model", std::string(5000, 'm'));
  CsvTable table = one_row(row);
  PublicRun run = read_public_run(table, table.records[0]);
  CHECK(run.model.num_layers == 32);  // The row's own architecture columns.
}

TEST_CASE("PublicRun: schedule, recompute, sharding and precision texts") {
  auto plan_of = [](const std::vector<std::pair<std::string, std::string>>& changes) {
    auto row = llama_row();
    set(row, "tp", "1");
    set(row, "pp", "4");
    set(row, "dp", "4");
    set(row, "global_batch", "64");
    for (const auto& [column, value] : changes) set(row, column, value);
    CsvTable table = one_row(row);
    PublicRun run = read_public_run(table, table.records[0]);
    INFO(run.reason);
    REQUIRE(run.predictable());
    return run.plan;
  };
  CHECK(plan_of({{"pipeline_schedule", "1F1B (Megatron-LM)"}}).schedule == ScheduleKind::kOneFOneB);
  CHECK(plan_of({{"pipeline_schedule", "Zero Bubble auto-searched schedule, memory limit p*M_B"}})
            .schedule == ScheduleKind::kZb1p);
  CHECK(plan_of({{"pipeline_schedule", "Zero Bubble auto-searched schedule, activation memory "
                                       "limit 2p*M_B"}})
            .schedule == ScheduleKind::kZb2p);
  // The handcrafted forms keep their own names.
  CHECK(plan_of({{"pipeline_schedule", "ZB-H1"}}).schedule == ScheduleKind::kZbH1);
  CHECK(plan_of({{"pipeline_schedule", "ZB-H2"}}).schedule == ScheduleKind::kZbH2);
  Plan interleaved = plan_of({{"pipeline_schedule", "interleaved 1F1B"}, {"vp", "2"}});
  CHECK(interleaved.schedule == ScheduleKind::kInterleaved1F1B);
  CHECK(interleaved.vpp == 2);
  CHECK(plan_of({{"recompute", "selective (attention core only)"}}).recompute ==
        Recompute::kSelective);
  CHECK(plan_of({{"recompute", "full (activation checkpointing)"}}).recompute == Recompute::kFull);
  CHECK(plan_of({{"recompute", "none"}}).recompute == Recompute::kNone);
  CHECK(plan_of({{"fsdp_zero_distopt", "FSDP SHARD_GRAD_OP (ZeRO-2-like)"}}).zero_stage == 2);
  CHECK(plan_of({{"fsdp_zero_distopt", "none (DDP impl: local)"}}).zero_stage == 0);
  // "DDP (FSDP=0)" is plain data parallelism, not FSDP.
  CHECK(plan_of({{"fsdp_zero_distopt", "DDP (FSDP=0)"}}).zero_stage == 0);
  // Under Megatron-Bridge or NeMo, DDP runs the recipes' distributed optimizer.
  CHECK(plan_of({{"fsdp_zero_distopt", "DDP (FSDP=0)"},
                 {"framework", "Megatron-Bridge / Megatron-Core (NeMo 26.02)"}})
            .zero_stage == 1);
  CHECK(plan_of({{"fsdp_zero_distopt", "DDP (FSDP=0)"}, {"framework", "NeMo 2.0"}}).zero_stage ==
        1);
  CHECK(plan_of({{"fsdp_zero_distopt", "FSDP2"}}).zero_stage == 3);
  // Megatron-Bridge and NeMo recipes turn sequence parallelism on with tp > 1, and with it
  // megatron-core's TP overlap; Megatron-LM rows keep what they state (nothing: off).
  const std::pair<std::string, std::string> bridge = {
      "framework", "Megatron-Bridge / Megatron-Core (NeMo 26.02)"};
  Plan bridge_tp = plan_of({bridge, {"tp", "2"}, {"dp", "2"}});
  CHECK(bridge_tp.sequence_parallel);
  CHECK(tp_comm_overlap_in_force(bridge_tp));
  CHECK_FALSE(plan_of({bridge, {"tp", "2"}, {"dp", "2"}, {"sequence_parallel", "no"}})
                  .sequence_parallel);
  CHECK_FALSE(plan_of({bridge}).sequence_parallel);  // tp 1.
  Plan megatron_lm = plan_of({{"framework", "Megatron-LM"}, {"tp", "2"}, {"dp", "2"}});
  CHECK_FALSE(megatron_lm.sequence_parallel);
  CHECK_FALSE(tp_comm_overlap_in_force(megatron_lm));
  // The framework text sets the runtime, and with it the attention kernel.
  CHECK(plan_of({{"framework", "Megatron-LM"}}).runtime == Runtime::kMegatronLm);
  CHECK(attention_kernel(plan_of({{"framework", "Megatron-LM"}})) == AttentionKernel::kUnfused);
  CHECK(attention_kernel(plan_of({{"framework", "Megatron-LM with flash-attn 2"}})) ==
        AttentionKernel::kFlash2);
  CHECK(plan_of({{"framework", "Megatron-Bridge / Megatron-Core (NeMo 25.09)"}}).runtime ==
        Runtime::kMegatronCore);
  CHECK(plan_of({{"framework", "Megatron-DeepSpeed"}}).runtime == Runtime::kDeepSpeed);
  CHECK(plan_of({{"framework", "MosaicML Composer + llm-foundry (PyTorch FSDP)"}}).runtime ==
        Runtime::kPytorchFsdp);
  // An FSDP text keeps the runtime's flash-attn 2 unless it names the Triton kernel
  // (llm-foundry's attn_impl: triton).
  CHECK(attention_kernel(plan_of({{"framework", "MosaicML Composer + llm-foundry (PyTorch "
                                                "FSDP)"}})) == AttentionKernel::kFlash2);
  CHECK(attention_kernel(plan_of({{"framework", "llm-foundry (attn_impl: triton)"}})) ==
        AttentionKernel::kTriton);
  CHECK(attention_kernel(plan_of({{"framework", "HF Accelerate (PyTorch FSDP)"}})) ==
        AttentionKernel::kFlash2);
  CHECK(plan_of({{"precision", "amp_fp8 (FSDP mixed-precision mode DEFAULT)"}}).precision ==
        Precision::kFp8);
  CHECK(plan_of({{"precision", "fp16 mixed (loss-scale 8192)"}}).precision == Precision::kFp16);
  // Megatron-Bridge's nvfp4 rows (Transformer Engine's NVFP4BlockScaling).
  CHECK(plan_of({{"precision", "NVFP4"},
                 {"gpu_type", "B200 (DGX B200)"},
                 {"framework", "Megatron-Bridge / Megatron-Core (NeMo 26.02)"}})
            .precision == Precision::kNvfp4);
  // dp from num_gpus when empty.
  CHECK(plan_of({{"dp", ""}}).dp == 4);
  // The fp8 recipe a precision label names; else the runtime's default (noted).
  const std::pair<std::string, std::string> b200 = {"gpu_type", "B200 (DGX B200)"};
  CHECK(plan_of({bridge, b200, {"precision", "MXFP8"}}).fp8_recipe == Fp8Recipe::kMxfp8);
  CHECK(plan_of({bridge, b200, {"precision", "FP8-MX"}}).fp8_recipe == Fp8Recipe::kMxfp8);
  CHECK(plan_of({bridge, {"precision", "FP8-CS"}}).fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(plan_of({bridge, {"precision", "FP8-DS"}}).fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(plan_of({bridge, {"precision", "FP8 blockwise"}}).fp8_recipe == Fp8Recipe::kBlockwise);
  // Megatron-Bridge's performance scripts run no delayed scaling: its plain "FP8" is FP8-CS.
  // NeMo 24.x's recipes (Transformer Engine's default then) keep the runtime's default.
  CHECK(plan_of({bridge, {"precision", "FP8"}}).fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK_FALSE(plan_of({{"framework", "NeMo 24.07 (Megatron-Core)"}, {"precision", "FP8"}})
                  .fp8_recipe.has_value());
  CHECK_FALSE(plan_of({{"precision", "bf16"}}).fp8_recipe.has_value());
  auto row = llama_row();
  set(row, "precision", "fp8");
  CsvTable table = one_row(row);
  const PublicRun torchtitan_fp8 = read_public_run(table, table.records[0]);
  CHECK(std::find(torchtitan_fp8.defaults.begin(), torchtitan_fp8.defaults.end(),
                  "fp8 recipe not stated: tensorwise (the runtime's default)") !=
        torchtitan_fp8.defaults.end());
}

// torchtitan's performance tables list async TP among a row's optimizations: it is the plan's
// tp_comm_overlap there (torchtitan runs it only when told); elsewhere the words change nothing.
TEST_CASE("PublicRun: torchtitan rows naming async TP overlap their TP collectives") {
  auto plan_of = [](const std::vector<std::pair<std::string, std::string>>& changes) {
    auto row = llama_row();  // torchtitan, tp 2.
    for (const auto& [column, value] : changes) set(row, column, value);
    CsvTable table = one_row(row);
    PublicRun run = read_public_run(table, table.records[0]);
    INFO(run.reason);
    REQUIRE(run.predictable());
    return run;
  };
  PublicRun async = plan_of({{"other_result", "optimizations: Float8 + Async TP"}});
  CHECK(async.plan.tp_comm_overlap == std::optional<bool>(true));
  CHECK(tp_comm_overlap_in_force(async.plan));
  CHECK(std::find(async.defaults.begin(), async.defaults.end(),
                  "tp_comm_overlap: async TP (named in the row's text)") != async.defaults.end());
  CHECK(plan_of({{"framework", "torchtitan (FSDP2 + TP, async tensor parallel)"}})
            .plan.tp_comm_overlap == std::optional<bool>(true));
  CHECK_FALSE(plan_of({{"other_result", "optimizations: Float8"}}).plan.tp_comm_overlap);
  CHECK_FALSE(tp_comm_overlap_in_force(plan_of({}).plan));  // torchtitan's default: off.
  // Without tensor parallelism there is nothing to overlap; other runtimes are not torchtitan.
  CHECK_FALSE(plan_of({{"tp", "1"}, {"dp", "16"}, {"other_result", "Async TP"}})
                  .plan.tp_comm_overlap);
  CHECK_FALSE(plan_of({{"framework", "DeepSpeed"}, {"other_result", "Async TP"}})
                  .plan.tp_comm_overlap);
}

TEST_CASE("PublicRun: rows it cannot predict carry the reason") {
  auto reason_of = [](const std::vector<std::pair<std::string, std::string>>& changes) {
    auto row = llama_row();
    for (const auto& [column, value] : changes) set(row, column, value);
    CsvTable table = one_row(row);
    return read_public_run(table, table.records[0]).reason;
  };
  CHECK_THAT(reason_of({{"gpu_type", "TPU v5p"}}), Catch::Contains("unsupported GPU 'TPU v5p'"));
  CHECK_THAT(reason_of({{"layers", "many"}}),
             Catch::Contains("column 'layers' is 'many', expected an integer"));
  CHECK_THAT(reason_of({{"dp", "4"}}), Catch::Contains("but num_gpus is 16"));
  CHECK_THAT(reason_of({{"pipeline_schedule", "chimera"}, {"pp", "2"}, {"dp", "4"}}),
             Catch::Contains("unsupported schedule 'chimera'"));
  CHECK_THAT(reason_of({{"tp", "3"}, {"dp", ""}, {"num_gpus", "24"}}),
             Catch::Contains("impossible plan"));
  // Interleaving without vp whose middle stages differ: 18 layers on 8 stages split 2, 3, 3, 3,
  // 2, 2, 2, 1 (19 slots with the loss's).
  CHECK_THAT(reason_of({{"layers", "18"}, {"tp", "1"}, {"pp", "8"}, {"dp", "2"},
                        {"pipeline_schedule", "interleaved 1F1B, each layer a chunk"}}),
             Catch::Contains("chunks of unequal size"));
  CHECK(reason_of({}).empty());
}

TEST_CASE("PublicRun: interleaving without vp runs one layer per chunk") {
  auto plan_of = [](const std::string& layers, const std::string& pp, const std::string& dp) {
    auto row = llama_row();
    set(row, "layers", layers);
    set(row, "tp", "1");
    set(row, "pp", pp);
    set(row, "dp", dp);
    set(row, "pipeline_schedule", "interleaved 1F1B, each transformer layer a chunk");
    CsvTable table = one_row(row);
    PublicRun run = read_public_run(table, table.records[0]);
    INFO(run.reason);
    REQUIRE(run.predictable());
    return run;
  };
  // 22 layers on 8 stages: 2, 3 x 6, 2 (the ends carry embedding and loss); three chunks per
  // stage, the ends' third chunk empty (the Zero Bubble paper's "max chunks" rows).
  PublicRun uneven = plan_of("22", "8", "2");
  CHECK(uneven.plan.vpp == 3);
  CHECK(stage_layer_counts(uneven.plan, uneven.model) ==
        std::vector<int64_t>{2, 3, 3, 3, 3, 3, 3, 2});
  const ChunkLayout layout = chunk_layout(uneven.plan, uneven.model);
  CHECK(layout.chunk_layers[0] == 1);   // Rank 0's first chunk: the embedding and layer 0.
  CHECK(layout.chunk_layers[16] == 0);  // Rank 0's third chunk.
  CHECK(layout.chunk_layers[23] == 0);  // The loss chunk, on rank 7.
  CHECK(std::find(uneven.defaults.begin(), uneven.defaults.end(),
                  "vp not stated for interleaved 1F1B: 3 chunks per stage (one layer each; a "
                  "first or last stage with fewer layers leaves its last chunk empty)") !=
        uneven.defaults.end());
  // 32 layers on 4 stages: 8 each, eight chunks of one layer.
  CHECK(plan_of("32", "4", "4").plan.vpp == 8);
}

TEST_CASE("Accuracy: MoE with expert parallelism, context parallelism, fp8, H200 and B200") {
  auto predict = [](const std::vector<std::pair<std::string, std::string>>& changes) {
    auto row = llama_row();
    for (const auto& [column, value] : changes) set(row, column, value);
    CsvTable table = one_row(row);
    PublicRun run = read_public_run(table, table.records[0]);
    INFO(run.reason);
    REQUIRE(run.predictable());
    RowAccuracy result = predict_run(run, EfficiencyTable{}, CollectiveEfficiency{});
    CHECK(result.simulated);
    CHECK(result.predicted_tokens_per_s_per_gpu > 0);
    REQUIRE(result.error_pct.has_value());
    return result;
  };
  RowAccuracy moe = predict({{"model", "Mixtral 8x7B"}, {"ffn_hidden", "14336"},
                             {"vocab", "32000"}, {"seq_len", "4096"}, {"moe_experts", "8"},
                             {"moe_topk", "2"}, {"moe_ffn_hidden", "14336"},
                             {"gpu_type", "H200 SXM"}, {"ep", "8"},
                             {"sequence_parallel", "yes"}});
  REQUIRE(moe.run.model.moe.has_value());
  CHECK(moe.run.model.moe->num_experts == 8);
  CHECK(moe.run.plan.ep == 8);
  CHECK(moe.run.plan.etp == 0);  // Not Megatron-Bridge: Megatron's default, etp = tp.
  // Megatron-Bridge's MoE recipes set expert_tensor_parallel_size=1; Megatron's default is tp.
  RowAccuracy bridge_moe = predict(
      {{"model", "Mixtral 8x7B"}, {"ffn_hidden", "14336"}, {"vocab", "32000"},
       {"seq_len", "4096"}, {"moe_experts", "8"}, {"moe_topk", "2"}, {"moe_ffn_hidden", "14336"},
       {"gpu_type", "H200 SXM"}, {"tp", "2"}, {"dp", "8"}, {"ep", "8"},
       {"framework", "Megatron-Bridge / Megatron-Core (NeMo 26.02)"}});
  CHECK(bridge_moe.run.plan.etp == 1);
  CHECK(bridge_moe.run.plan.sequence_parallel);
  CHECK(moe.run.cluster.nodes[0].gpu.name == "H200-SXM-141GB");
  RowAccuracy context = predict({{"seq_len", "32768"}, {"gpu_type", "B200"}, {"cp", "4"},
                                 {"dp", "2"}, {"precision", "Float8 linears + BF16"},
                                 {"fsdp_zero_distopt", "none"}});
  CHECK(context.run.plan.cp == 4);
  CHECK(context.run.plan.precision == Precision::kFp8);
  CHECK(context.run.plan.zero_stage == 0);
  CHECK(context.run.cluster.nodes[0].gpu.name == "B200");
  // fp8 on B200 beats bf16 on B200 for the same plan.
  RowAccuracy bf16 = predict({{"seq_len", "32768"}, {"gpu_type", "B200"}, {"cp", "4"},
                              {"dp", "2"}, {"fsdp_zero_distopt", "none"}});
  CHECK(context.predicted_tokens_per_s_per_gpu > bf16.predicted_tokens_per_s_per_gpu);
}

TEST_CASE("Accuracy: the split is a fixed hash of row_id") {
  // FNV-1a 32-bit: "1" -> 873244444 (even), "2" -> 923577301 (odd), "93" -> 251567493 (odd).
  CHECK_FALSE(in_test_split("1"));
  CHECK(in_test_split("2"));
  CHECK(in_test_split("93"));
  CHECK_FALSE(in_test_split("140"));
}

TEST_CASE("Accuracy: three public rows (Megatron-LM, torchtitan, Zero Bubble)") {
  AccuracyResult result = run_accuracy_file(test_data("accuracy/three_runs.csv"));
  REQUIRE(result.rows.size() == 3);
  CHECK(result.file_rows == 3);
  CHECK(result.not_predicted.empty());
  CHECK(result.not_compared.empty());
  REQUIRE(result.all.rows == 3);
  double sum = 0, worst = 0;
  for (const RowAccuracy& row : result.rows) {
    REQUIRE(row.simulated);
    REQUIRE(row.error_pct.has_value());
    double target = *row.run.target_tokens_per_s_per_gpu;
    CHECK(*row.error_pct == Approx(100 * (row.predicted_tokens_per_s_per_gpu - target) / target));
    CHECK(row.predicted_tokens_per_s_per_gpu > 0);
    // Calibrated constants: each of these rows within 25% of its source.
    CHECK(std::abs(*row.error_pct) < 25);
    sum += std::abs(*row.error_pct);
    worst = std::max(worst, std::abs(*row.error_pct));
  }
  CHECK(result.all.mape == Approx(sum / 3));
  CHECK(result.all.max_abs_error_pct == Approx(worst));
  CHECK(result.train.rows + result.test.rows == 3);
  REQUIRE(result.worst.size() == 3);
  CHECK(std::abs(*result.rows[result.worst[0]].error_pct) == Approx(worst));

  const RowAccuracy& megatron = result.rows[0];
  CHECK(megatron.run.row_id == "5");
  CHECK(megatron.run.framework == Framework::kMegatron);
  CHECK(megatron.run.plan.runtime == Runtime::kMegatronLm);
  CHECK(attention_kernel(megatron.run.plan) == AttentionKernel::kUnfused);
  CHECK(megatron.run.plan.pp == 2);
  CHECK(megatron.run.plan.precision == Precision::kFp16);
  CHECK(megatron.run.cluster.nodes[0].count == 64);

  const RowAccuracy& titan = result.rows[1];
  CHECK(titan.run.row_id == "93");
  CHECK(titan.test_split);
  CHECK(titan.run.plan.zero_stage == 3);
  CHECK(titan.run.plan.runtime == Runtime::kTorchtitan);
  CHECK(attention_kernel(titan.run.plan) == AttentionKernel::kFlash2);

  // The Zero Bubble row publishes its memory: compared in decimal GB.
  const RowAccuracy& zero_bubble = result.rows[2];
  CHECK(zero_bubble.run.plan.schedule == ScheduleKind::kZb2p);
  REQUIRE(zero_bubble.run.published_memory_gb.has_value());
  REQUIRE(zero_bubble.memory_error_pct.has_value());
  // Row 140 is the searched ZB-2p, whose W wait until memory forces them, so every stage fills
  // towards the 2p-microbatch limit (schedules/zero_bubble_auto.cc): -7.9% (run as the
  // handcrafted zb-h2, whose middle stages hold less, it was -10.2%).
  CHECK(*zero_bubble.memory_error_pct < 0);
  CHECK(std::abs(*zero_bubble.memory_error_pct) < 10);
  CHECK(result.memory.rows == 1);
  // One row per source: three sources, no schedule groups.
  REQUIRE(result.sources.size() == 3);
  CHECK(result.sources[0].source_id == "S01");
  CHECK(result.schedule_groups.empty());
}

TEST_CASE("Accuracy: filters by split and source") {
  AccuracyOptions options;
  options.only_source = "S10";
  AccuracyResult only = run_accuracy_file(test_data("accuracy/three_runs.csv"), options);
  REQUIRE(only.rows.size() == 1);
  CHECK(only.rows[0].run.source_id == "S10");
  options.only_source.clear();
  options.split = Split::kTest;
  AccuracyResult test = run_accuracy_file(test_data("accuracy/three_runs.csv"), options);
  REQUIRE(test.rows.size() == 1);
  CHECK(test.rows[0].run.row_id == "93");
  CHECK(test.train.rows == 0);
}

}  // namespace
}  // namespace ppsim
