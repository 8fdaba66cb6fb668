// `ppsim inspect`: a model's parameters, FLOPs per token and per-layer op table.
#include <fmt/format.h>

#include <string>

#include "simulator/report/inspect_report.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {

void add_inspect_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model;
    int64_t tp = 1;
    int64_t micro_batch = 1;
    int64_t seq_len = 0;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "inspect", "A model's parameters, active parameters, FLOPs per token and op table");
  command->add_option("model", options->model, "Zoo name, model JSON or HF config.json")
      ->required();
  command->add_option("--tp", options->tp, "Tensor-parallel degree for the op table")
      ->check(CLI::PositiveNumber);
  command->add_option("--mbs", options->micro_batch, "Micro-batch size for the op table")
      ->check(CLI::PositiveNumber);
  command->add_option("--seq-len", options->seq_len, "Sequence length (default: the model's)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--json", options->json, "Print JSON (fields documented in the README)");
  command->footer(
      "Examples:\n"
      "  ppsim inspect llama3-70b\n"
      "  ppsim inspect --json tests/data/hf/Qwen2.5-7B/config.json --tp 4");
  command->callback([options, &exit_code] {
    ModelSpec model = load_model_with_notes(options->model);
    OpShape shape;
    shape.micro_batch_size = options->micro_batch;
    shape.seq_length = options->seq_len > 0 ? options->seq_len : model.seq_length;
    shape.tp = options->tp;
    if (model.num_attention_heads % shape.tp != 0 ||
        (model.num_kv_heads % shape.tp != 0 && shape.tp % model.num_kv_heads != 0)) {
      throw InputError("--tp", "",
                       fmt::format("tp={} must divide the {} attention heads (and divide or be a "
                                   "multiple of the {} kv heads) of {}",
                                   shape.tp, model.num_attention_heads, model.num_kv_heads,
                                   model.name));
    }
    fmt::print("{}", options->json ? inspect_report_json(model, shape)
                                   : inspect_report_text(model, shape));
    exit_code = 0;
  });
}

}  // namespace ppsim
