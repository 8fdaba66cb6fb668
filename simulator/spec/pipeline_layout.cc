#include "simulator/spec/pipeline_layout.h"

#include <fmt/format.h>

#include "simulator/spec/error.h"

namespace ppsim {
namespace {

// A layout expands to at most this many symbols (docs/limits.md): far above any model's layers
// and stages, low enough that a typo such as "t*99999999" is an error, not an allocation.
constexpr int64_t kMaxLayoutSymbols = 1'000'000;

class LayoutExpander {
 public:
  // `whole` is the layout the user gave, for messages; `text` the part to expand, starting at
  // `offset` in it.
  LayoutExpander(std::string_view whole, std::string_view text, size_t offset,
                 const std::string& source, const std::string& json_path)
      : whole_(whole), text_(text), offset_(offset), source_(source), json_path_(json_path) {}

  // Megatron's unrolling: "(...)*n" groups, then "x*n" symbols (commas are already gone).
  std::string expand() {
    std::string out;
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '(') {
        const size_t close = text_.find(')', i + 1);
        if (close == std::string_view::npos)
          fail(fmt::format("'(' at {} is never closed", offset_ + i));
        const std::string_view group = text_.substr(i + 1, close - i - 1);
        if (group.find('(') != std::string_view::npos) {
          fail(fmt::format("groups do not nest (Megatron's layout grammar): '(' at {}",
                           offset_ + i + 1 + group.find('(')));
        }
        if (close + 1 >= text_.size() || text_[close + 1] != '*') {
          fail(fmt::format("the group at {} needs a count, as in (tt|)*4", offset_ + i));
        }
        size_t next = close + 2;
        const int64_t count = read_count(next);
        const std::string inner =
            LayoutExpander(whole_, group, offset_ + i + 1, source_, json_path_).expand();
        for (int64_t k = 0; k < count; ++k) append(out, inner);
        i = next;
      } else if (c == ')') {
        fail(fmt::format("')' at {} has no '('", offset_ + i));
      } else if (c == '*') {
        fail(
            fmt::format("'*' at {} follows no symbol or group; write t*4 or (tt|)*4", offset_ + i));
      } else {
        check_symbol(c, i);
        size_t next = i + 1;
        int64_t count = 1;
        if (next < text_.size() && text_[next] == '*') {
          ++next;
          count = read_count(next);
        }
        append(out, std::string(static_cast<size_t>(count), c));
        i = next;
      }
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(source_, json_path_, fmt::format("pipeline layout '{}': {}", whole_, why));
  }

  void check_symbol(char c, size_t at) const {
    if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') return;
    fail(
        fmt::format("'{}' at {} is not a layout symbol; use E (embedding), t (transformer "
                    "layer), m (MTP layer), L (loss), '|' between virtual stages, x*n and "
                    "(...)*n to repeat",
                    c, offset_ + at));
  }

  // The decimal count at `at` (advanced past it).
  int64_t read_count(size_t& at) const {
    const size_t start = at;
    int64_t count = 0;
    while (at < text_.size() && text_[at] >= '0' && text_[at] <= '9') {
      count = count * 10 + (text_[at] - '0');
      if (count > kMaxLayoutSymbols) {
        fail(fmt::format("the count at {} is above {}", offset_ + start, kMaxLayoutSymbols));
      }
      ++at;
    }
    if (at == start) fail(fmt::format("'*' at {} needs a count", offset_ + start - 1));
    return count;
  }

  void append(std::string& out, const std::string& piece) const {
    if (static_cast<int64_t>(out.size() + piece.size()) > kMaxLayoutSymbols) {
      fail(fmt::format("expands to more than {} symbols", kMaxLayoutSymbols));
    }
    out += piece;
  }

  std::string_view whole_;
  std::string_view text_;
  size_t offset_;
  const std::string& source_;
  const std::string& json_path_;
};

}  // namespace

std::vector<LayoutStage> parse_pipeline_layout(std::string_view text, const std::string& source,
                                               const std::string& json_path) {
  // Megatron drops the cosmetic commas before anything else ("(tt|),*2" is "(tt|)*2"); messages
  // show the text without them, so that their positions count in it.
  std::string bare;
  for (char c : text) {
    if (c != ',') bare += c;
  }
  auto fail = [&](const std::string& why) {
    throw InputError(source, json_path, fmt::format("pipeline layout '{}': {}", bare, why));
  };
  const std::string symbols = LayoutExpander(bare, bare, 0, source, json_path).expand();
  std::vector<LayoutStage> stages(1);
  int64_t embeddings = 0, losses = 0;
  bool after_mtp = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    const char c = symbols[i];
    LayoutStage& stage = stages.back();
    switch (c) {
      case '|':
        stages.emplace_back();
        break;
      case 'E':
        // Megatron asks for the embedding first and the loss last among the layers; ppsim also
        // needs them on the first and last virtual stage (chunk_layout.h), so no stage before
        // E or after L.
        if (i != 0) fail("the embedding (E) must be the first symbol, once");
        stage.embedding = true;
        ++embeddings;
        break;
      case 'L':
        if (i + 1 != symbols.size()) fail("the loss (L) must be the last symbol, once");
        stage.loss = true;
        ++losses;
        break;
      case 't':
        if (after_mtp) fail("decoder layers (t) must come before the MTP layers (m)");
        ++stage.decoder_layers;
        break;
      default:  // 'm', the only other symbol the expander lets through.
        after_mtp = true;
        ++stage.mtp_layers;
        break;
    }
  }
  if (embeddings != 1) fail("it must start with the embedding (E), as in Et*4|t*4|...");
  if (losses != 1) fail("it must end with the loss (L), as in ...|t*4L");
  return stages;
}

std::vector<int64_t> rank_decoder_layers(const std::vector<LayoutStage>& stages, int64_t pp) {
  std::vector<int64_t> layers(pp, 0);
  for (size_t i = 0; i < stages.size(); ++i) layers[i % pp] += stages[i].decoder_layers;
  return layers;
}

std::optional<std::string> pipeline_layout_problem(const std::vector<LayoutStage>& stages,
                                                   int64_t pp, int64_t chunks_per_rank,
                                                   int64_t num_layers, int64_t mtp_layers,
                                                   const std::string& model_name) {
  const int64_t count = static_cast<int64_t>(stages.size());
  if (count % pp != 0) {
    return fmt::format(
        "pipeline_layout has {} virtual stages, not a multiple of pp={} (every rank runs as "
        "many; Megatron takes vpp = stages / pp)",
        count, pp);
  }
  if (count != pp * chunks_per_rank) {
    return fmt::format(
        "pipeline_layout has {} virtual stages, {} per rank, and the plan runs {} per rank "
        "(give vpp={} with an interleaved schedule, or leave vpp out: Megatron takes it from "
        "the layout)",
        count, count / pp, chunks_per_rank, count / pp);
  }
  int64_t decoder = 0, mtp = 0;
  for (int64_t i = 0; i < count; ++i) {
    const LayoutStage& stage = stages[i];
    decoder += stage.decoder_layers;
    mtp += stage.mtp_layers;
    if (stage.mtp_layers > 0 && !stage.loss) {
      return fmt::format(
          "virtual stage {} holds MTP layers (m) but not the loss: ppsim runs the MTP layers on "
          "the loss's stage (Megatron's standalone MTP stages are not modelled); move the m "
          "entries just before L",
          i);
    }
  }
  if (decoder != num_layers) {
    return fmt::format("pipeline_layout places {} decoder layers (t) but {} has {}", decoder,
                       model_name, num_layers);
  }
  if (mtp != mtp_layers) {
    return fmt::format("pipeline_layout places {} MTP layers (m) but {} has {}", mtp, model_name,
                       mtp_layers);
  }
  return std::nullopt;
}

}  // namespace ppsim
