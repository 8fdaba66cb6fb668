// ppsim: the command-line entry point. Input errors are caught here, and only here; so is
// every other failure, so that no exception, abort or bad_alloc reaches the user raw: an
// input error is exit 2, anything else is a bug (exit 1) reported with the command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/spec/error.h"
#include "simulator/spec/json_reader.h"
#include "tools/commands.h"

namespace {

// The command line, quoted where needed, for a bug report.
std::string command_line(int argc, char** argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (i > 0) text += ' ';
    if (plain) {
      text += arg;
    } else {
      text += '\'';
      for (char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
      text += '\'';
    }
  }
  return text;
}

// A failure that is not the user's: exit 1, and ask for a report that lets us reproduce it.
int report_bug(int argc, char** argv, const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr,
             "ppsim: internal error: {}\n"
             "ppsim: this is a bug in ppsim, not in your input. Please report it with this "
             "command line and the files it names:\n"
             "ppsim:   {}\n",
             what, command_line(argc, argv));
  return ppsim::kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  // Every argument is UTF-8 (it may reach a JSON report); refuse the others up front.
  for (int i = 1; i < argc; ++i) {
    if (std::optional<size_t> offset = ppsim::invalid_utf8_offset(argv[i])) {
      fmt::print(stderr,
                 "ppsim: error: argument {} is not valid UTF-8 (byte {} is 0x{:02X}); ppsim "
                 "reads UTF-8 text\n",
                 i, *offset, static_cast<unsigned char>(argv[i][*offset]));
      return ppsim::kExitBadInput;
    }
  }
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
  } catch (const std::bad_alloc&) {
    return report_bug(argc, argv,
                      "out of memory (the work estimate let through a run too large for this "
                      "machine; lower --max-memory to refuse such runs up front)");
  } catch (const nlohmann::json::exception& error) {
    return report_bug(argc, argv, std::string("JSON library: ") + error.what());
  } catch (const std::exception& error) {
    return report_bug(argc, argv, error.what());
  } catch (...) {
    return report_bug(argc, argv, "an unknown exception");
  }
  return exit_code;
}
