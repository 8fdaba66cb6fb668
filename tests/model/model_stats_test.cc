#include "simulator/model/model_stats.h"

#include <catch2/catch.hpp>

#include "simulator/spec/model_file.h"

namespace ppsim {
namespace {

struct PublishedCount {
  const char* zoo_name;
  double total;
  double active;  // 0 when the same as total.
};

// Published parameter counts (model cards and papers), held within 0.5%.
const PublishedCount kPublished[] = {
    {"llama2-7b", 6.74e9, 0},        // Llama 2 paper / HF card: 6,738,415,616.
    {"llama3-8b", 8.03e9, 0},        // HF card: 8,030,261,248.
    {"llama3-70b", 70.6e9, 0},       // HF card: 70,553,706,496.
    {"llama3.1-405b", 405.9e9, 0},   // HF card: 405,853,388,800.
    {"gpt3-175b", 174.6e9, 0},       // Brown et al. 2020 / Narayanan et al. 2021: 174.6B.
    {"mixtral-8x7b", 46.7e9, 12.9e9},  // Mistral AI: 46.7B total, 12.9B active.
};

TEST_CASE("ModelStats: zoo models have their published parameter counts") {
  for (const PublishedCount& published : kPublished) {
    INFO(published.zoo_name);
    ParameterCounts counts = count_parameters(load_model_spec(published.zoo_name));
    CHECK(counts.total == Approx(published.total).epsilon(0.005));
    double active = published.active > 0 ? published.active : published.total;
    CHECK(counts.active == Approx(active).epsilon(0.005));
  }
}

TEST_CASE("ModelStats: Megatron FLOPs closed form for a dense GPT (REFERENCE 1.6)") {
  // 72*B*s*L*h^2*(1 + s/(12h) + V/(12*L*h)) for MHA, gelu, F = 4h.
  ModelSpec gpt;
  gpt.name = "gpt";
  gpt.num_layers = 24;
  gpt.hidden_size = 2048;
  gpt.ffn_hidden_size = 4 * 2048;
  gpt.num_attention_heads = 16;
  gpt.num_kv_heads = 16;
  gpt.head_dim = 128;
  gpt.vocab_size = 51200;
  gpt.seq_length = 2048;
  gpt.activation = Activation::kGelu;
  gpt.norm = Norm::kLayerNorm;
  double B = 8, s = 2048, L = 24, h = 2048, V = 51200;
  double closed_form = 72 * B * s * L * h * h * (1 + s / (12 * h) + V / (12 * L * h));
  CHECK(training_flops_per_iteration(gpt, 8, 2048) == Approx(closed_form).epsilon(1e-12));
}

TEST_CASE("ModelStats: padded vocabulary as Megatron pads it") {
  CHECK(padded_vocab_size(50257, 1) == 50304);
  CHECK(padded_vocab_size(50257, 8) == 51200);
  CHECK(padded_vocab_size(128256, 1) == 128256);
  CHECK(padded_vocab_size(128256, 8) == 129024);
}

}  // namespace
}  // namespace ppsim
