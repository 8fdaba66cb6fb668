// `ppsim export`: a plan as a Megatron-LM launch script, a DeepSpeed config or a torchtitan TOML.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "simulator/export/launcher_config.h"
#include "simulator/spec/error.h"
#include "simulator/spec/model_file.h"
#include "tools/commands.h"
#include "tools/step_inputs.h"

namespace ppsim {

void add_export_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string model, cluster, plan, format, output;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "export",
      "Write a plan as a launcher config: Megatron-LM script, DeepSpeed JSON, torchtitan "
      "TOML");
  command->add_option("--model", options->model, "Zoo name, model JSON or HF config.json")
      ->required();
  command
      ->add_option("--cluster", options->cluster,
                   "Zoo name, cluster JSON, or NODE_TYPE:NODES (dgx-h100:4)")
      ->required();
  command
      ->add_option("--plan", options->plan,
                   "Plan JSON file, shipped plan name, or inline tp=8,pp=4,dp=1,mbs=1,gbs=64")
      ->required();
  command->add_option("--format", options->format, "megatron, deepspeed or torchtitan")->required();
  command->add_option("-o,--output", options->output, "Write to FILE instead of stdout");
  command->footer(
      "Example:\n"
      "  ppsim export --model llama3-70b --cluster dgx-h100-4 --format megatron "
      "--plan tp=8,pp=4,dp=1,mbs=1,gbs=64,schedule=interleaved-1f1b,vpp=2 -o launch.sh\n"
      "A plan the runtime cannot run (a schedule, ZeRO or offload form, cp/ep form or layer\n"
      "split it lacks; docs/export.md \"What each runtime runs\") is refused with exit 2,\n"
      "naming the feature. What the file runs but cannot state exactly is printed as\n"
      "'ppsim: warning: ...' on stderr (and as a comment where the format has comments);\n"
      "DeepSpeed's launch line and script settings as 'ppsim: note: ...'.\n"
      "Formats and field mapping: docs/export.md.\n"
      "Exit status: 0 written (with or without warnings), 2 for bad input or a plan the\n"
      "runtime cannot run.");
  command->callback([options, &exit_code] {
    LauncherFormat format = parse_launcher_format(options->format, "--format");
    ModelSpec model = load_model_with_notes(options->model);
    ClusterSpec cluster = load_cluster_spec(options->cluster);
    Plan plan = load_plan(options->plan);
    validate_plan(plan, model, cluster, "--plan");
    LauncherOutput output = export_launcher(format, model, cluster, plan);
    if (options->output.empty()) {
      fmt::print("{}", output.text);
    } else {
      {
        std::ofstream out(options->output, std::ios::binary);
        if (!out || !(out << output.text) || !out.flush()) {
          throw InputError(
              "--output", "",
              fmt::format("cannot write '{}' (check that the folder exists)", options->output));
        }
      }
      if (format == LauncherFormat::kMegatron) {
        namespace fs = std::filesystem;
        std::error_code ignored;  // A script that cannot be made executable still runs with bash.
        fs::permissions(options->output,
                        fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                        fs::perm_options::add, ignored);
      }
    }
    std::fflush(stdout);
    for (const std::string& note : output.notes) fmt::print(stderr, "ppsim: note: {}\n", note);
    for (const std::string& warning : output.warnings) {
      fmt::print(stderr, "ppsim: warning: {}\n", warning);
    }
    exit_code = 0;
  });
}

}  // namespace ppsim
