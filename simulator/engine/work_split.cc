#include "simulator/engine/work_split.h"

#include <vector>

namespace ppsim {

void run_split(const WorkSplit* split, ThreadPool& pool, int64_t count,
               const std::function<void(int64_t)>& body,
               const std::function<std::string(int64_t)>& encode,
               const std::function<void(int64_t, std::string_view)>& decode) {
  if (split == nullptr || split->processes() == 1) {
    pool.run(count, body);
    return;
  }
  std::vector<int64_t> mine;
  for (int64_t i = split->process(); i < count; i += split->processes()) mine.push_back(i);
  pool.run(static_cast<int64_t>(mine.size()), [&](int64_t j) { body(mine[j]); });
  split->exchange(count, encode, decode);
}

}  // namespace ppsim
