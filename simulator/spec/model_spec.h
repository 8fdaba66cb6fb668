// ModelSpec: the shape of a decoder-only transformer, and its parsers.
//
// JSON keys (models/*.json; DESIGN.md "Specs"):
//   {"name", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
//    "num_kv_heads", "vocab_size", "seq_length", "activation": "swiglu|geglu|gelu",
//    "norm": "rmsnorm|layernorm", "tied_embeddings": bool,
//    "moe": {"num_experts", "top_k", "expert_ffn_hidden_size", "every_n_layers"?,
//            "layer_offset"?, "num_shared_experts"?, "shared_expert_ffn_hidden_size"?,
//            "first_k_dense"?, "imbalance"?, "capacity_factor"?, "num_groups"?, "group_topk"?,
//            "latent_size"?}?,
//    "mla": {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
//            "v_head_dim"}?, "mtp_layers"?, "qk_norm"?, "qkv_bias"?, "sliding_window"?,
//    "sliding_window_pattern"?, "hybrid_layer_pattern"?, "mtp_layer_pattern"?,
//    "mamba": {"num_heads", "head_dim", "state_size", "num_groups", "conv_kernel"?,
//              "chunk_size"?}?}
// plus optional keys beside them: "head_dim" (default hidden_size / num_attention_heads),
// "linear_bias" (default false), "position_embedding": "rope|learned|none" (default "rope";
// "none" for models without positional encoding, such as Nemotron-H's attention layers),
// "max_position_embeddings" (default seq_length; sizes the learned table), "rope_theta"
// (default 10000; Megatron --rotary-base), "source" (a
// citation string). "qkv_bias" (default false): the query, key and value projections carry
// biases and nothing else does (Qwen2/Qwen2.5; Megatron --add-qkv-bias); with linear_bias true
// it adds nothing. A HuggingFace config.json (Llama, Mistral, Mixtral, Qwen2/3, Qwen2/3-MoE,
// Gemma 2/3, Phi-3, GPT-2, GPT-NeoX, DeepSeek-V2/V3, Kimi K2, GLM-4.5, OLMoE, GPT-OSS,
// Nemotron-H) is accepted wherever a model is; see hf_config.h.
//
// Hybrid models (Nemotron-H, Nemotron 3; Megatron-Core's hybrid model,
// --hybrid-layer-pattern): "hybrid_layer_pattern" gives one character per layer, each layer one
// block with its own pre-norm and residual: 'M' a Mamba-2 mixer ("mamba" keys), '*'
// self-attention, '-' the dense MLP (ffn_hidden_size), 'E' the MoE block ("moe" keys, whose
// every_n_layers, layer_offset and first_k_dense the pattern replaces). Without it every layer
// is a transformer layer: attention, then the dense MLP or the MoE block.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ppsim {

// The MLP's activation. SwiGLU (Llama, Qwen, Mistral) and GeGLU (Gemma: a tanh-GELU gate) are
// gated: a gate and an up projection, three weight matrices in all; GELU (GPT) and squared ReLU
// (Nemotron-H, relu(x)^2: Megatron's squared_relu, HF "relu2") have two.
enum class Activation { kSwiglu, kGelu, kGeglu, kSquaredRelu };
inline bool is_gated(Activation activation) {
  return activation == Activation::kSwiglu || activation == Activation::kGeglu;
}
// The spec's name of an activation: "swiglu", "gelu", "geglu" or "squared_relu".
const char* activation_name(Activation activation);
enum class Norm { kRmsNorm, kLayerNorm };
enum class PositionEmbedding { kRope, kLearned, kNone };

// The busiest expert's load over the mean when routing is left to the router and its balancing
// loss. Switch Transformer (Fedus et al. 2021, section 2.2 and Table 1) trains at capacity
// factors 1.0-1.25 and drops under 1% of tokens, i.e. a balanced router keeps its busiest expert
// within about 1.2x the mean; we take 1.2 as the prior. A measured run should say its own
// figure; benchmarks that force balanced routing (Megatron --moe-router-force-load-balancing,
// the NeMo performance tables) are 1.0.
inline constexpr double kDefaultMoeImbalance = 1.2;

// Mixture-of-experts feed-forward layers.
struct MoeSpec {
  int64_t num_experts = 0;             // Routed experts per MoE layer. Required, >= 1.
  int64_t top_k = 0;                   // Experts each token is routed to. Required, 1..num_experts.
  int64_t expert_ffn_hidden_size = 0;  // Width of one expert's MLP. Required.
  int64_t every_n_layers = 1;          // Layer i (past first_k_dense) is MoE when
                                       // i % every_n_layers == layer_offset. Default 1.
  // Which layer of each every_n_layers group is MoE, 0..every_n_layers-1. Default 0 (the
  // first; Megatron's integer --moe-layer-freq). HuggingFace's Qwen decoder_sparse_step and
  // Llama 4's interleave_moe_layer_step n make the last of each group MoE: n - 1.
  int64_t layer_offset = 0;
  int64_t num_shared_experts = 0;      // Experts every token passes through. Default 0.
  int64_t shared_expert_ffn_hidden_size = 0;  // Width of one shared expert; default
                                              // expert_ffn_hidden_size.
  int64_t first_k_dense = 0;  // The first k layers keep the dense MLP (DeepSeek's
                              // first_k_dense_replace). Default 0.
  // Busiest expert's tokens over the mean (>= 1); sets the critical expert of every MoE layer.
  double imbalance = kDefaultMoeImbalance;
  // Token-drop capacity: each expert takes at most capacity_factor x the mean and is padded up
  // to it (Megatron --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity). Absent
  // (0) means dropless: every routed token is kept, and the token counts go to the host.
  double capacity_factor = 0;
  // Group-limited routing (DeepSeek-V3's node-limited routing; Megatron --moe-router-num-groups
  // and --moe-router-group-topk; HF n_group and topk_group): the experts form num_groups equal
  // groups and each token's top_k experts come from its best group_topk groups. 0 = none.
  int64_t num_groups = 0;
  int64_t group_topk = 0;
  // Latent MoE (Nemotron 3 Super's LatentMoE; Megatron --moe-latent-size; HF moe_latent_size):
  // each routed token is projected from h down to latent_size before dispatch (fc1_latent_proj,
  // replicated on every tp rank), the routed experts work at that width, and the combined output
  // is projected back to h (fc2_latent_proj). The router and shared experts see h. 0 = none.
  int64_t latent_size = 0;

  bool dropless() const { return capacity_factor <= 0; }
  // The width of the rows the routed experts read and write: latent_size, or `hidden`.
  int64_t routed_width(int64_t hidden) const { return latent_size > 0 ? latent_size : hidden; }
  int64_t shared_width() const {
    return num_shared_experts *
           (shared_expert_ffn_hidden_size > 0 ? shared_expert_ffn_hidden_size
                                              : expert_ffn_hidden_size);
  }
};

// What is wrong with a MoeSpec's group-limited routing (both keys or neither; num_groups divides
// num_experts; 1 <= group_topk <= num_groups; the chosen groups hold at least top_k experts);
// nullopt when it is consistent or absent. Pure.
std::optional<std::string> moe_group_problem(const MoeSpec& moe);

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through low-rank
// projections; each head's query and key are a "nope" part and a shared-rope part.
struct MlaSpec {
  int64_t q_lora_rank = 0;        // Query down-projection rank; 0 = a full h x a*(nope+rope) q.
  int64_t kv_lora_rank = 0;       // Compressed key/value rank. Required, >= 1.
  int64_t qk_nope_head_dim = 0;   // Per-head query/key width without rotary. Required.
  int64_t qk_rope_head_dim = 0;   // Rotary part, shared by all heads for keys. Required.
  int64_t v_head_dim = 0;         // Per-head value (and attention output) width. Required.

  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// A Mamba-2 mixer (Dao and Gu 2024, "Transformers are SSMs", arXiv:2405.21060; Megatron-Core's
// MambaMixer, HF NemotronH): in_proj h -> [z, x, B, C, dt] of 2 d_inner + 2 groups N + heads,
// a depthwise causal conv1d over [x, B, C], the chunked SSD scan, a gated RMSNorm of d_inner and
// out_proj d_inner -> h, with d_inner = num_heads * head_dim. Tensor parallelism splits the
// heads and the groups (Megatron requires tp to divide both).
struct MambaSpec {
  int64_t num_heads = 0;    // SSM heads. Required (Megatron --mamba-num-heads).
  int64_t head_dim = 0;     // Channels per head P. Required (--mamba-head-dim).
  int64_t state_size = 0;   // State dimension N. Required (--mamba-state-dim).
  int64_t num_groups = 0;   // Groups sharing B and C. Required, divides num_heads.
  int64_t conv_kernel = 4;  // Causal conv1d width; default 4 (Mamba-2, Megatron's d_conv).
  int64_t chunk_size = 128; // SSD chunk length Q; default 128 (Megatron --mamba-chunk-size).

  int64_t inner_width() const { return num_heads * head_dim; }
  // Channels the conv1d runs over: x, B and C.
  int64_t conv_width() const { return inner_width() + 2 * num_groups * state_size; }
  // in_proj's output width: z, x, B, C and dt.
  int64_t in_proj_width() const { return inner_width() + conv_width() + num_heads; }
};

struct ModelSpec {
  std::string name;              // Display name, e.g. "llama3-70b". Required.
  int64_t num_layers = 0;        // Transformer layers L. Required, >= 1.
  int64_t hidden_size = 0;       // h. Required.
  int64_t ffn_hidden_size = 0;   // Dense MLP width F (per gate for SwiGLU). Required.
  int64_t num_attention_heads = 0;  // a. Required; divides hidden_size unless head_dim is given.
  int64_t num_kv_heads = 0;      // Key/value heads g (GQA); == a for MHA. Required, divides a.
  int64_t vocab_size = 0;        // V (unpadded). Required.
  int64_t seq_length = 0;        // Default training sequence length s. Required.
  int64_t head_dim = 0;          // Per-head size; JSON "head_dim", default h / a.
  Activation activation = Activation::kSwiglu;  // Required: "swiglu", "geglu" or "gelu".
  Norm norm = Norm::kRmsNorm;                   // Required: "rmsnorm" or "layernorm".
  bool tied_embeddings = false;  // Output layer shares the input embedding. Required.
  bool linear_bias = false;      // Linear layers carry biases (GPT-2/3, NeoX). Default false.
  PositionEmbedding position_embedding = PositionEmbedding::kRope;  // Default rope.
  int64_t max_position_embeddings = 0;  // Learned position table rows; default seq_length.
  // RoPE base frequency theta (HF "rope_theta", Megatron --rotary-base); JSON "rope_theta",
  // default 10000 (Su et al. 2021, Llama 1/2, Megatron's default). Not used by the cost model;
  // the launcher exports write it.
  double rope_theta = 10000;
  std::optional<MoeSpec> moe;    // Absent for dense models.
  std::optional<MlaSpec> mla;    // Multi-head latent attention; absent for standard attention.
  std::optional<MambaSpec> mamba;  // The 'M' layers' mixer; only with hybrid_layer_pattern.
  // One of 'M', '*', '-', 'E' per layer (header); empty for a transformer.
  std::string hybrid_layer_pattern;
  // A hybrid model's multi-token-prediction block: the layers each of its mtp_layers depths
  // holds, in the same characters (Megatron's MTP pattern, HF mtp_hybrid_override_pattern;
  // Nemotron 3 Super: "*E"). Required with mtp_layers on a hybrid model; a transformer's MTP
  // layer is a copy of its last layer.
  std::string mtp_layer_pattern;
  int64_t mtp_layers = 0;        // Multi-token prediction layers after the last (DeepSeek-V3: 1).
  bool qk_norm = false;          // RMSNorm on each query and key head (Qwen3, OLMo 2, Gemma 3).
  bool qkv_bias = false;         // Biases on the Q, K, V projections only (Qwen2). Default false.
  // Sliding-window attention: keys within `sliding_window` tokens (0 = full causal). With
  // sliding_window_pattern n > 0, every n-th layer (index % n == n - 1) keeps full attention
  // and the rest slide (GPT-OSS: 2); with 0, every layer slides (Mistral 7B).
  int64_t sliding_window = 0;
  int64_t sliding_window_pattern = 0;
  std::string source;            // Where the numbers come from (citation). Optional.
  // What an import assumed or left out (HuggingFace configs: the default sequence length, parts
  // not counted); the commands print each as "ppsim: note: ..." on stderr. Not a JSON key.
  std::vector<std::string> notes;

  bool is_moe() const { return moe.has_value(); }
  bool is_hybrid() const { return !hybrid_layer_pattern.empty(); }
  // A hybrid layer's character: index < num_layers is a decoder layer; num_layers + j the j-th
  // layer of the MTP block (mtp_block_layers).
  char hybrid_kind(int64_t index) const {
    return index < num_layers ? hybrid_layer_pattern[index]
                              : mtp_layer_pattern[index - num_layers];
  }
  // What layer `index` (0-based) holds: self-attention, a Mamba mixer, a feed-forward block
  // (the dense MLP or, when is_moe_layer, the MoE block). A transformer layer has attention and
  // a feed-forward block; a hybrid layer exactly one of the three.
  bool has_attention(int64_t index) const { return !is_hybrid() || hybrid_kind(index) == '*'; }
  bool is_mamba_layer(int64_t index) const { return is_hybrid() && hybrid_kind(index) == 'M'; }
  bool has_feed_forward(int64_t index) const {
    return !is_hybrid() || hybrid_kind(index) == '-' || hybrid_kind(index) == 'E';
  }
  // True when layer `index` has an MoE feed-forward block.
  bool is_moe_layer(int64_t index) const {
    if (is_hybrid()) return hybrid_kind(index) == 'E';
    return moe && index >= moe->first_k_dense &&
           index % moe->every_n_layers == moe->layer_offset;
  }
  // The layers one MTP depth repeats, as indices the layer queries above take: the last layer
  // of a transformer; num_layers .. num_layers + |mtp_layer_pattern| - 1 of a hybrid model.
  std::vector<int64_t> mtp_block_layers() const {
    if (!is_hybrid()) return {num_layers - 1};
    std::vector<int64_t> layers;
    for (size_t j = 0; j < mtp_layer_pattern.size(); ++j) {
      layers.push_back(num_layers + static_cast<int64_t>(j));
    }
    return layers;
  }
  // The tensor-parallel column-then-row GEMM pairs of layer `index`, each with its own
  // sequence-parallel all-gather and reduce-scatter: attention or a Mamba mixer (in and out
  // projections), and a dense MLP or shared experts (routed experts split over ep instead).
  int tensor_parallel_blocks(int64_t index) const {
    const bool mixer = has_attention(index) || is_mamba_layer(index);
    const bool mlp = has_feed_forward(index) &&
                     (!is_moe_layer(index) || moe->num_shared_experts > 0);
    return (mixer ? 1 : 0) + (mlp ? 1 : 0);
  }
  // Keys each query of layer `index` may attend to at most (the window), or 0 for all.
  int64_t attention_window(int64_t index) const {
    if (sliding_window <= 0) return 0;
    if (sliding_window_pattern > 0 && index % sliding_window_pattern == sliding_window_pattern - 1)
      return 0;
    return sliding_window;
  }
  // Everything the per-layer queries above say of layer `index`: the layer's ops, costs and
  // saved bytes depend on its index only through them, so layers of one kind price alike
  // (the chunk pricer prices each kind once; a test holds every zoo model to it).
  struct LayerKind {
    bool attention = false;
    bool mamba = false;
    bool feed_forward = false;
    bool moe = false;
    int64_t window = 0;
    bool operator==(const LayerKind&) const = default;
  };
  LayerKind layer_kind(int64_t index) const {
    return {has_attention(index), is_mamba_layer(index), has_feed_forward(index),
            is_moe_layer(index), attention_window(index)};
  }
  int64_t num_moe_layers() const;
  // Query projection width a * head_dim and key/value width g * head_dim (MLA: the query and
  // key width a * (nope + rope) and the value width a * v_head_dim).
  int64_t query_width() const {
    return num_attention_heads * (mla ? mla->qk_head_dim() : head_dim);
  }
  int64_t kv_width() const { return num_kv_heads * head_dim; }
  // Width of the attention output that the output projection reads: a * head_dim (MLA: a * v).
  int64_t attention_output_width() const {
    return num_attention_heads * (mla ? mla->v_head_dim : head_dim);
  }
};

// What is wrong with a Mamba mixer's groups (num_groups must divide num_heads: each group's B
// and C serve an equal share of the heads), or nullopt. Pure.
std::optional<std::string> mamba_group_problem(const MambaSpec& mamba);

// What stops tp and cp from splitting a Mamba mixer as Megatron-Core does, or nullopt: tp
// must divide the heads and groups; cp (MambaContextParallel) must divide each tp rank's
// heads, and its groups (each cp rank scans whole groups) or be a multiple of them (a group
// repeated to cp/groups ranks). The message names the numbers, not a plan key. Pure.
std::optional<std::string> mamba_split_problem(const MambaSpec& mamba, int64_t tp, int64_t cp);

// What is wrong with a model's hybrid layer patterns: the decoder pattern's length against
// num_layers, a character other than M * - E, 'M' layers (decoder or MTP) without "mamba" (or
// the reverse), 'E' layers without "moe" (or the reverse), MoE placement keys beside the
// pattern, mtp_layers without mtp_layer_pattern (or the reverse); nullopt when consistent or
// absent. Pure.
std::optional<std::string> hybrid_pattern_problem(const ModelSpec& model);
// The model key a hybrid_pattern_problem message is about: "mamba", "mtp_layer_pattern" or
// "hybrid_layer_pattern".
std::string hybrid_problem_key(const std::string& problem);

// Reads ppsim's own model format (the keys above) from parsed JSON; does not validate
// (validate_model_spec does). Errors throw InputError naming `source` and the JSON path.
// model_file.h reads a model from text or a file in either format.
ModelSpec parse_ppsim_model_json(const nlohmann::json& json, const std::string& source);

// Checks cross-field consistency (heads divide, positive sizes); throws InputError.
void validate_model_spec(const ModelSpec& model, const std::string& source);

}  // namespace ppsim
