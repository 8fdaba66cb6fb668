// The report of `ppsim inspect`: its JSON op table at the given degrees carries each op's shape,
// work and the all-to-all bytes it sends, the numbers layer_ops gives (worked by hand in
// tests/model/hybrid_model_test.cc for Nemotron 3 Nano's Mamba layer at tp 2, cp 4).
#include "simulator/report/inspect_report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

// The first op named `name` in `part` of an inspect JSON.
nlohmann::json find_op(const nlohmann::json& report, const std::string& part,
                       const std::string& name) {
  for (const nlohmann::json& op : report["ops"]) {
    if (op["part"] == part && op["name"] == name) return op;
  }
  FAIL("no op " << name << " in part " << part);
  return {};
}

TEST_CASE("InspectReport: the op table at tp, cp and ep carries the all-to-all bytes") {
  const ModelSpec model = load_model_spec("nemotron-3-nano-30b-a3b");
  OpShape shape;
  shape.seq_length = 8192;
  shape.tp = 2;
  shape.cp = 4;
  shape.ep = 8;
  const nlohmann::json report = nlohmann::json::parse(inspect_report_json(model, shape));
  CHECK(report["op_shape"]["tp"] == 2);
  CHECK(report["op_shape"]["cp"] == 4);
  CHECK(report["op_shape"]["ep"] == 8);
  // Five all-to-alls of the rank's 2048 tokens x 5152 in_proj columns before the conv1d, one
  // of y (8192 tokens x 512 channels) before the norm; nothing else in a Mamba layer.
  const nlohmann::json conv1d = find_op(report, "mamba_layer", "mamba_conv1d");
  CHECK(conv1d["context_all_to_alls"] == 5);
  CHECK(conv1d["context_all_to_all_bytes"].get<double>() == 2048.0 * 5152 * 2);
  const nlohmann::json norm = find_op(report, "mamba_layer", "mamba_gated_norm");
  CHECK(norm["context_all_to_alls"] == 1);
  CHECK(norm["context_all_to_all_bytes"].get<double>() == 8192.0 * 512 * 2);
  CHECK(find_op(report, "mamba_layer", "mamba_in_proj")["context_all_to_all_bytes"] == 0);
  // The MoE layer's dispatch: each tp rank routes its 1/tp of the GPU's 2048 tokens, 1024 x
  // top 6 rows of 2688 in bf16, times the critical rank's load (layer_ops.h
  // moe_critical_rank_load: one hot expert among the 16 of a rank).
  const nlohmann::json permute = find_op(report, "moe_layer", "moe_permute");
  const double load = moe_critical_rank_load(*model.moe, 8);
  REQUIRE(load >= 1);
  CHECK(permute["all_to_all_bytes"].get<double>() == Approx(1024.0 * 6 * 2688 * 2 * load));
  CHECK(permute["context_all_to_all_bytes"] == 0);
  // At cp 1 no op has context all-to-alls.
  shape.cp = 1;
  const nlohmann::json whole = nlohmann::json::parse(inspect_report_json(model, shape));
  for (const nlohmann::json& op : whole["ops"]) CHECK(op["context_all_to_alls"] == 0);
}

}  // namespace
}  // namespace ppsim
