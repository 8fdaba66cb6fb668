#!/bin/bash
# Regenerates the committed golden files from a built ppsim (STYLE.md rule 11). Golden files
# change only through this script; review the diff before committing it.
#
# Usage: tools/update_golden.sh [PPSIM_BINARY]     (default: build/ppsim)
#
# Sections:
# - launcher exports (tests/export/launcher_config_test.cc): for every line of
#   tests/golden/export/cases.txt, `ppsim export` in each format to
#   tests/golden/export/NAME_{megatron.sh,deepspeed.json,torchtitan.toml}, for the formats the
#   line lists (default all three).
# - CLI reports (tests/tools/cli_golden_test.cc): for every line NAME ARGS... of
#   tests/golden/cli/cases.txt, the stdout of `ppsim ARGS...` to tests/golden/cli/NAME.out.
set -euo pipefail

cd "$(dirname "$0")/.."
ppsim=${1:-build/ppsim}
if [[ ! -x "$ppsim" ]]; then
  echo "update_golden.sh: no ppsim binary at '$ppsim'; build it or pass its path" >&2
  exit 2
fi

export_dir=tests/golden/export
declare -A extension=([megatron]=sh [deepspeed]=json [torchtitan]=toml)
while read -r name model cluster plan formats extra; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  formats=${formats:-megatron,deepspeed,torchtitan}
  if [[ -z "$plan" || -n "${extra:-}" ]]; then
    echo "update_golden.sh: $export_dir/cases.txt: expected NAME MODEL CLUSTER PLAN [FORMATS], got '$name $model $cluster $plan ${formats:-} ${extra:-}'" >&2
    exit 2
  fi
  declare -A runtime=([megatron]=megatron-core [deepspeed]=deepspeed [torchtitan]=torchtitan)
  for format in ${formats//,/ }; do
    out="$export_dir/${name}_${format}.${extension[$format]}"
    # Each file is written for its own runtime (launcher_runtime_problem).
    "$ppsim" export --model "$model" --cluster "$cluster" --plan "$plan,runtime=${runtime[$format]}" --format "$format" \
      -o "$out" 2>/dev/null
    echo "wrote $out"
  done
done <"$export_dir/cases.txt"

cli_dir=tests/golden/cli
while read -r name arguments; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # The arguments are split on spaces, as the test splits them (no quoting in cases.txt).
  # shellcheck disable=SC2086
  "$ppsim" $arguments >"$cli_dir/$name.out" 2>/dev/null
  echo "wrote $cli_dir/$name.out"
done <"$cli_dir/cases.txt"
