// The ppsim subcommands. Each add_*_command registers its options and examples on `app` and a
// callback that runs it and stores the process exit status in `exit_code`.
// Exit statuses (a contract): 0 success, 1 internal error (a bug), 2 bad input, 3 nothing fits, 4 validation over tolerance,
// 5 no device for the requested backend (nothing was run), 6 a validation run failed (out of
// memory, a peer timed out).
#pragma once

#include <CLI/CLI.hpp>

namespace ppsim {

inline constexpr int kExitInternal = 1;  // A bug in ppsim (main.cc asks for a report).
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitNothingFits = 3;
inline constexpr int kExitOverTolerance = 4;
inline constexpr int kExitNoDevice = 5;
inline constexpr int kExitRunFailed = 6;

void add_accuracy_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_memory_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);
void add_schedule_command(CLI::App& app, int& exit_code);
void add_simulate_command(CLI::App& app, int& exit_code);
void add_validate_command(CLI::App& app, int& exit_code);

}  // namespace ppsim
