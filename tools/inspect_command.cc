// `ppsim inspect`: a model's parameters, FLOPs per token and per-layer op table.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <tuple>

#include "simulator/report/inspect_report.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "simulator/spec/plan.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {

void add_inspect_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model;
    int64_t tp = 1;
    int64_t cp = 1;
    int64_t ep = 1;
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
  command->add_option("--cp", options->cp, "Context-parallel degree for the op table")
      ->check(CLI::PositiveNumber);
  command->add_option("--ep", options->ep, "Expert-parallel degree for the op table (MoE)")
      ->check(CLI::PositiveNumber);
  command->add_option("--mbs", options->micro_batch, "Micro-batch size for the op table")
      ->check(CLI::PositiveNumber);
  command->add_option("--seq-len", options->seq_len, "Sequence length (default: the model's)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--json", options->json, "Print JSON (fields documented in the README)");
  command->footer(
      "Examples:\n"
      "  ppsim inspect llama3-70b\n"
      "  ppsim inspect --json tests/data/hf/Qwen2.5-7B/config.json --tp 4\n"
      "  ppsim inspect nemotron-3-nano-30b-a3b --tp 2 --cp 4 --ep 8 --seq-len 131072");
  command->callback([options, &exit_code] {
    ModelSpec model = load_model_with_notes(options->model);
    // The op table's degrees, checked as a plan's are (plan.h op_shape_problem), one flag at a
    // time so the error names the flag whose degree does not fit.
    Plan plan;
    plan.micro_batch_size = options->micro_batch;
    if (options->seq_len > 0) plan.seq_length = options->seq_len;
    for (auto [flag, degree, value] : {std::tuple{"--tp", &Plan::tp, options->tp},
                                       std::tuple{"--cp", &Plan::cp, options->cp},
                                       std::tuple{"--ep", &Plan::ep, options->ep}}) {
      plan.*degree = value;
      if (std::optional<std::string> problem = op_shape_problem(plan, model)) {
        throw InputError(flag, "", *problem);
      }
    }
    const OpShape shape = op_shape(plan, model);
    fmt::print("{}", options->json ? inspect_report_json(model, shape)
                                   : inspect_report_text(model, shape));
    exit_code = 0;
  });
}

}  // namespace ppsim
