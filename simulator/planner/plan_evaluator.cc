#include "simulator/planner/plan_evaluator.h"

namespace ppsim {

std::string objective_name(Objective objective) {
  return objective_names()[static_cast<size_t>(objective)];
}

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> names = {"time", "cost", "p90", "time-to-train"};
  return names;
}

}  // namespace ppsim
