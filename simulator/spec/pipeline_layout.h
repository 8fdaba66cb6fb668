// PipelineLayout: Megatron-Core's pipeline layout string, the plan key "pipeline_layout"
// (Megatron-LM's --pipeline-model-parallel-layout, Megatron-Bridge's
// pipeline_model_parallel_layout): which layers each virtual pipeline stage holds.
//
// Grammar (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list;
// ../shared/REFERENCE.md 1.3): virtual stages separated by '|', in forward order, stage i running
// on pipeline rank i % pp as that rank's virtual stage i / pp; inside a stage "E" the embedding,
// "t" a transformer (decoder) layer, "m" a multi-token-prediction layer, "L" the loss; "x*n"
// repeats one symbol and "(...)*n" a group (not nested); commas are cosmetic and an empty stage
// is allowed. "Et|(tt|)*30mL" is Megatron-Bridge's DeepSeek-V3 on pp 8 x vpp 4: the embedding
// and one layer, thirty stages of two, then the MTP layer and the loss on a stage of their own.
//
// Megatron's rules, checked here: one E, the first symbol; one L, the last; decoder layers
// before MTP layers; the stage count a multiple of pp. ppsim's own (pipeline_layout_problem):
// the MTP layers in the loss's stage (Megatron's "standalone" MTP on another rank is not
// modelled). Any virtual stage may be empty, a middle rank's too (GLM-5.2's H100 recipe,
// "Et|t||tttt|...", keeps five empty on pp 13 x vpp 2): it passes its input on, costing the
// transfers around it and nothing else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

// One virtual stage of a layout.
struct LayoutStage {
  int64_t decoder_layers = 0;  // "t" entries.
  int64_t mtp_layers = 0;      // "m" entries.
  bool embedding = false;      // Holds "E".
  bool loss = false;           // Holds "L".
};

// Parses a layout string into its virtual stages (forward order). Throws InputError naming
// `source` and `json_path` on a symbol other than E, t, m, L, a repetition without a count, a
// nested or unclosed group, or an E/L/m out of place (above); its positions count in the text
// without commas, which the message quotes. Stage counts, layers and MTP
// layers against a plan and model: pipeline_layout_problem.
std::vector<LayoutStage> parse_pipeline_layout(std::string_view text, const std::string& source,
                                               const std::string& json_path);

// Decoder layers per pipeline rank (pp entries): virtual stage i runs on rank i % pp.
std::vector<int64_t> rank_decoder_layers(const std::vector<LayoutStage>& stages, int64_t pp);

// Why `stages` cannot split a model of `num_layers` decoder layers and `mtp_layers` MTP layers
// over `pp` ranks of `chunks_per_rank` virtual stages each, or nullopt.
std::optional<std::string> pipeline_layout_problem(const std::vector<LayoutStage>& stages,
                                                   int64_t pp, int64_t chunks_per_rank,
                                                   int64_t num_layers, int64_t mtp_layers,
                                                   const std::string& model_name);

}  // namespace ppsim
