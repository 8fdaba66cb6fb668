// ppsim: the command-line entry point. Input errors are caught here, and only here.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "simulator/spec/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ppsim: pipeline-parallel training simulator and performance predictor"};
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  ppsim inspect llama3-70b\n"
      "  ppsim memory --model llama3-70b --cluster dgx-h100-4 --plan tp=8,pp=4,dp=1,gbs=64\n"
      "  ppsim plan --model llama3-70b --cluster dgx-h100-4\n"
      "Run 'ppsim SUBCOMMAND --help' for each subcommand's options.");
  int exit_code = 0;
  ppsim::add_accuracy_command(app, exit_code);
  ppsim::add_export_command(app, exit_code);
  ppsim::add_inspect_command(app, exit_code);
  ppsim::add_memory_command(app, exit_code);
  ppsim::add_plan_command(app, exit_code);
  ppsim::add_profile_command(app, exit_code);
  ppsim::add_schedule_command(app, exit_code);
  ppsim::add_simulate_command(app, exit_code);
  ppsim::add_validate_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    fmt::print(stderr, "ppsim: error: {} (run 'ppsim --help' or 'ppsim SUBCOMMAND --help')\n",
               error.what());
    return ppsim::kExitBadInput;
  } catch (const ppsim::InputError& error) {
    std::fflush(stdout);
    fmt::print(stderr, "ppsim: error: {}\n", error.what());
    return ppsim::kExitBadInput;
  }
  return exit_code;
}
