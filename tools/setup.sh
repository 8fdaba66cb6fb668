# Shared set-up for tools/ppsim and tools/test (sourced, not run).
# 1. Installs the Debian packages that are missing (only then; a second run installs nothing).
# 2. Configures build/ once with the default preset, then lets ninja rebuild only what changed
#    (a no-op on an up-to-date tree, well under a second). Build output goes to stderr so that
#    stdout stays the tool's own.

# Header or program that proves each package is installed, and the package that provides it.
ppsim_required_packages=(
  "/usr/bin/cmake:cmake"
  "/usr/bin/ninja:ninja-build"
  "/usr/bin/g++:g++"
  "/usr/bin/ccache:ccache"
  "/usr/include/boost/graph/adjacency_list.hpp:libboost-graph-dev"
  "/usr/include/eigen3/Eigen/Core:libeigen3-dev"
  "/usr/include/nlohmann/json.hpp:nlohmann-json3-dev"
  "/usr/include/CLI/CLI.hpp:libcli11-dev"
  "/usr/include/catch2/catch.hpp:catch2"
  "/usr/include/fmt/format.h:libfmt-dev"
  # OpenMPI: `mpirun -np N ppsim profile` across processes and nodes (docs/profile.md).
  "/usr/lib/$(uname -m)-linux-gnu/openmpi/include/mpi.h:libopenmpi-dev"
  "/usr/bin/mpirun:openmpi-bin"
)

ppsim_install_missing() {
  local missing=() entry
  for entry in "${ppsim_required_packages[@]}"; do
    [ -e "${entry%%:*}" ] || missing+=("${entry##*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "ppsim: installing missing packages: ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "ppsim: error: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 2; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# The sanitizer and fuzzing path only (.ci/run's second stage, tools/fuzz): clang and its
# runtime libraries (ASan, UBSan, libFuzzer). The default build never needs them.
ppsim_install_sanitizer_packages() {
  local saved=("${ppsim_required_packages[@]}")
  ppsim_required_packages=(
    "/usr/bin/clang++:clang"
    "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-$(uname -m).a:libclang-rt-14-dev"
  )
  ppsim_install_missing
  ppsim_required_packages=("${saved[@]}")
}

ppsim_setup() {
  local root="$1"
  ppsim_install_missing
  if [ ! -f "$root/build/build.ninja" ]; then
    echo "ppsim: configuring build/ (first run)" >&2
    (cd "$root" && cmake --preset default >&2)
  fi
  local log
  log="$(mktemp)"
  if ! cmake --build "$root/build" -j "$(nproc)" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "ppsim: error: the build failed (output above)" >&2
    exit 1
  fi
  grep -q "no work to do" "$log" || echo "ppsim: built build/ppsim" >&2
  rm -f "$log"
}
