// Every example the documentation shows runs: the `ppsim --help` and `ppsim SUBCOMMAND --help`
// example lines, and the `ppsim ...` lines in the code blocks of README.md and docs/*.md.
//
// Conventions the documentation follows (README "Examples that run"):
// - an example is a line that starts with `ppsim ` (or `tools/ppsim `, `$ ppsim `) in a help
//   footer or a Markdown code block; a trailing backslash continues it on the next line, and a
//   trailing `# comment` is not part of it;
// - a line with `[`, `...`, `|` or an all-capitals placeholder (MODEL, FILE) is a synopsis, not an
//   example, and is not run;
// - the comment may say `exits N` (or `exits N, or M ...`): the example must exit with one of
//   them (default 0). CPU timings on a machine busy with other work can stray past validate's
//   tolerance (exit 4), so the validate examples say `exits 0, or 4 ...`;
// - a comment that says `CUDA GPU` marks an example that needs one: run only where
//   `nvidia-smi -L` lists a GPU.
// Each source (a help text, a Markdown file) runs its examples in order in one scratch folder
// that links the repository's configs/, models/ and tests/, so relative paths resolve as from the
// repository root, an example may read what an earlier one wrote (profile, then validate), and
// the files they write stay out of the checkout.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

namespace ppsim {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::string source;   // "README.md:104" or "ppsim simulate --help".
  std::string command;  // Arguments after "ppsim".
  std::string comment;  // The trailing comment, without '#'.
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// "ppsim ARGS  # comment" -> {ARGS, comment}; nullopt when the line is not a ppsim command.
std::optional<std::pair<std::string, std::string>> split_command(std::string line) {
  line = trim(line);
  for (const char* prefix : {"$ ", "tools/", "./tools/"}) {
    if (line.rfind(prefix, 0) == 0) line = line.substr(std::string(prefix).size());
  }
  if (line.rfind("ppsim ", 0) != 0 && line != "ppsim") return std::nullopt;
  std::string comment;
  static const std::regex trailing(R"(\s#\s?(.*)$)");
  std::smatch match;
  if (std::regex_search(line, match, trailing)) {
    comment = match[1];
    line = line.substr(0, match.position(0));
  }
  return std::make_pair(trim(line.substr(5)), comment);
}

// The examples of one Markdown file's code blocks, with continuation lines joined.
std::vector<Example> markdown_examples(const fs::path& file, const std::string& name) {
  std::vector<Example> examples;
  std::ifstream in(file);
  std::string line;
  bool in_block = false;
  int number = 0;
  std::string pending;
  int pending_line = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string text = trim(line);
    if (text.rfind("```", 0) == 0) {
      in_block = !in_block;
      pending.clear();
      continue;
    }
    if (!in_block) continue;
    if (pending.empty()) {
      if (!split_command(text)) continue;
      pending_line = number;
    }
    bool continues = !text.empty() && text.back() == '\\';
    if (continues) text.pop_back();
    pending += (pending.empty() ? "" : " ") + trim(text);
    if (continues) continue;
    auto command = split_command(pending);
    examples.push_back(Example{name + ":" + std::to_string(pending_line), command->first,
                               command->second});
    pending.clear();
  }
  return examples;
}

// The subcommands `ppsim --help` lists.
std::vector<std::string> subcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line;
  bool listing = false;
  static const std::regex entry(R"(^  ([a-z]+)\s{2,}.*)");
  while (std::getline(in, line)) {
    if (line.find("SUBCOMMANDS") != std::string::npos ||
        line.find("Subcommands") != std::string::npos) {
      listing = true;
      continue;
    }
    std::smatch match;
    if (listing && std::regex_match(line, match, entry)) names.push_back(match[1]);
  }
  return names;
}

std::vector<Example> help_examples(const std::string& help, const std::string& name) {
  std::vector<Example> examples;
  std::istringstream in(help);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ppsim ", 0) != 0) continue;
    auto command = split_command(line);
    if (command) examples.push_back(Example{name, command->first, command->second});
  }
  return examples;
}

bool is_synopsis(const std::string& command) {
  static const std::regex placeholder(R"((^|[\s=,:])[A-Z][A-Z_]{2,}\b)");
  return command.find('[') != std::string::npos || command.find("...") != std::string::npos ||
         command.find('|') != std::string::npos || std::regex_search(command, placeholder);
}

// The exit codes the comment allows: "exits 1", "exits 0, or 4 when ..."; default {0}.
std::vector<int> expected_exits(const std::string& comment) {
  static const std::regex exits(R"(\bexits? (\d+)((?:,? or \d+)*))");
  std::smatch match;
  if (!std::regex_search(comment, match, exits)) return {0};
  std::vector<int> codes = {std::stoi(match[1])};
  static const std::regex more(R"(\d+)");
  std::string rest = match[2];
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), more); it != std::sregex_iterator();
       ++it) {
    codes.push_back(std::stoi(it->str()));
  }
  return codes;
}

bool has_cuda_gpu() {
  static const bool present = std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
  return present;
}

// A scratch folder linking the repository's data folders.
fs::path scratch_folder(const std::string& name) {
  std::string safe = std::regex_replace(name, std::regex("[^A-Za-z0-9_.-]"), "_");
  fs::path dir = fs::path(testing::temp_path("examples")) / safe;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* folder : {"configs", "models", "tests", "docs"}) {
    fs::create_directory_symlink(fs::path(PPSIM_SOURCE_DIR) / folder, dir / folder);
  }
  return dir;
}

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr, the tail.
};

Outcome run_in(const fs::path& dir, const std::string& arguments) {
  fs::path log = dir / "example.log";
  std::string command = "cd '" + dir.string() + "' && '" + PPSIM_BINARY + "' " + arguments +
                        " >'" + log.string() + "' 2>&1 </dev/null";
  int status = std::system(command.c_str());
  Outcome outcome;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::string text = testing::read_file(log.string());
  outcome.output = text.size() > 3000 ? text.substr(text.size() - 3000) : text;
  return outcome;
}

void run_examples(const std::string& source, const std::vector<Example>& examples, int& ran) {
  fs::path dir = scratch_folder(source);
  for (const Example& example : examples) {
    if (is_synopsis(example.command)) continue;
    if (example.comment.find("CUDA GPU") != std::string::npos && !has_cuda_gpu()) {
      WARN(example.source << ": needs a CUDA GPU, not run: ppsim " << example.command);
      continue;
    }
    Outcome outcome = run_in(dir, example.command);
    INFO(example.source << ": ppsim " << example.command << "\n" << outcome.output);
    std::vector<int> allowed = expected_exits(example.comment);
    CHECK(std::find(allowed.begin(), allowed.end(), outcome.exit_code) != allowed.end());
    ++ran;
  }
  fs::remove_all(dir);
}

TEST_CASE("Examples: the extraction rules") {
  auto command = split_command("$ tools/ppsim plan --top 3   # the main job");
  REQUIRE(command);
  CHECK(command->first == "plan --top 3");
  CHECK(command->second == "the main job");
  CHECK_FALSE(split_command("mpirun -np 2 ppsim profile"));
  CHECK(is_synopsis("export --model MODEL --plan PLAN"));
  CHECK(is_synopsis("plan [--model M]"));
  CHECK(is_synopsis("simulate ... --profile h200.json"));
  CHECK_FALSE(is_synopsis("simulate --model llama3-8b --plan tp=8,pp=4 --straggler node=2:0.8"));
  CHECK(expected_exits("exits 1: above the bar") == std::vector<int>{1});
  CHECK(expected_exits("exits 0, or 4 when a busy machine strays") == std::vector<int>{0, 4});
  CHECK(expected_exits("the headline") == std::vector<int>{0});
}

TEST_CASE("Examples: every --help example runs") {
  testing::CommandResult top = testing::run_ppsim("--help");
  REQUIRE(top.exit_code == 0);
  std::vector<std::string> names = subcommands(top.out);
  REQUIRE(names.size() >= 9);  // inspect, memory, simulate, schedule, plan, export, profile, ...
  int ran = 0;
  run_examples("ppsim --help", help_examples(top.out, "ppsim --help"), ran);
  for (const std::string& name : names) {
    testing::CommandResult help = testing::run_ppsim(name + " --help");
    REQUIRE(help.exit_code == 0);
    std::vector<Example> examples = help_examples(help.out, "ppsim " + name + " --help");
    INFO(name);
    CHECK_FALSE(examples.empty());  // Every subcommand shows an example.
    run_examples("ppsim " + name + " --help", examples, ran);
  }
  CHECK(ran >= 15);
}

TEST_CASE("Examples: every README and docs example runs") {
  std::vector<fs::path> files = {fs::path(PPSIM_SOURCE_DIR) / "README.md"};
  std::vector<fs::path> docs;
  for (const auto& entry : fs::directory_iterator(fs::path(PPSIM_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  std::sort(docs.begin(), docs.end());
  files.insert(files.end(), docs.begin(), docs.end());
  int ran = 0;
  for (const fs::path& file : files) {
    std::string name = fs::relative(file, PPSIM_SOURCE_DIR).string();
    run_examples(name, markdown_examples(file, name), ran);
  }
  CHECK(ran >= 25);
}

}  // namespace
}  // namespace ppsim
