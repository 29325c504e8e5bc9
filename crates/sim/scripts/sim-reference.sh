#!/usr/bin/env bash
# The simulator's outcomes, written so that two builds can be compared with
# `diff -r` (docs/simulator.md, Speed): every workload of examples/sim/ (the
# NuPoCo Table 2 scenarios on both of the paper's machines) and the
# workloads of `coloc bench sim`, under every registry policy with fixed
# seeds, plus the profiles `coloc profile --sim` measures, the oracle's
# searches and `coloc bench paper nupoco`'s table.
#
#   crates/sim/scripts/sim-reference.sh COLOC_BINARY OUT_DIR [JOBS]
#
# Per run OUT_DIR holds the trace without its wall-clock fields (`decide`,
# the policy's own time, and `started_unix`) and what the command printed
# (less log timestamps, the mean decision time and wall seconds), or its
# error; the output of a build at one commit is the reference for
# another: `diff -r OUT_A OUT_B` is empty when simulated outcomes did not
# change. Runs go JOBS at a time (default 2); the profile store is a fresh
# one under OUT_DIR/.data, so the user's is not touched, and each run starts
# from a copy of it holding the profiles alone (runs learn into the store,
# and auto reads what they learned).
#
# SIM_REFERENCE_ONLY=REGEX (grep -E) keeps the runs whose file name matches
# it (`WORKLOAD-PLATFORM-POLICY-sSEED`, `profile-WORKLOAD-PLATFORM`,
# `bench-paper-nupoco`): a few runs of two builds, to bisect a difference.
# A pair's profiles are made where any of its runs is kept (resense, tang
# and auto read them), and their files kept only where the name matches.
#
# Traces of version 1 (before plans carried reasons) and 2 compare with
# sim-outcomes-diff.sh, which leaves out the why and keeps what happened.
set -euo pipefail
cd "$(dirname "$0")/../../.."
[ $# -ge 2 ] || { echo "usage: $0 COLOC_BINARY OUT_DIR [JOBS]" >&2; exit 2; }
coloc=$(realpath "$1")
out=$(realpath -m "$2")
jobs=${3:-2}
only=${SIM_REFERENCE_ONLY:-.}
[ ! -e "$out" ] || { echo "$out exists; give a new directory" >&2; exit 2; }
mkdir -p "$out/.work" "$out/.data"
export XDG_DATA_HOME="$out/.data"

# Workload and platform(s), one pair a line.
pairs() {
  local amd=nupoco-amd64 intel=nupoco-intel72
  for w in nupoco-barriers nupoco-kmeans nupoco-memory-compute nupoco-mixes nupoco-serial-scalable; do
    echo "examples/sim/$w.toml $amd"
  done
  for w in examples/sim/nupoco-table2/*.toml; do
    echo "$w $amd"
    echo "$w $intel"
  done
  echo "examples/sim/resense-dynamic.toml opteron48"
  echo "examples/sim/tang-bigtable-protobuf.toml clovertown"
  echo "examples/sim/tang-pairs.toml clovertown"
  echo "examples/sim/tranquilizer-figure9.toml opteron-8431"
  echo "crates/harness/src/timing/sim-dynamic-8.toml $amd"
  echo "crates/harness/src/timing/sim-oracle-4x8.toml opteron48"
}

policies=$("$coloc" policies | awk '{print $1}' | grep -vx oracle)

# What a command printed, less what is not simulated: our directory, log
# lines' wall-clock timestamps, the mean decision time and wall seconds.
normalize() {
  sed -i -E -e "s|$out|OUT|g" -e 's/^[0-9T:.-]+Z +//' -e '/mean decision ms/d' \
    -e 's/, [0-9.]+ s wall//' "$1"
}
export -f normalize

# One run: workload, platform, policy, seed, extra arguments.
run() {
  local w=$1 p=$2 pol=$3 seed=$4
  shift 4
  local name
  name=$(basename "$w" .toml)-$p-$pol-s$seed
  local dir="$out/.work/$name"
  # Its own copy of the store the profiles went into: every run learns
  # into the store and auto reads what was learned (co-run rates), so with
  # one store shared a run's plans depended on which runs ended before it
  # (with JOBS > 1, on timing; with SIM_REFERENCE_ONLY, on the subset).
  mkdir -p "$dir.data"
  cp -r "$out/.data/." "$dir.data/"
  export XDG_DATA_HOME="$dir.data"
  if "$coloc" sim "$w" --platform "$p" --policy "$pol" --seed "$seed" --out "$dir" "$@" \
      > "$out/$name.out" 2>&1; then
    jq -c 'del(.decide, .started_unix)' "$dir/trace.jsonl" > "$out/$name.trace.jsonl"
  fi
  normalize "$out/$name.out"
}
export -f run
export coloc out

# Profiles first: resense, tang and auto read them (a pair none of whose
# runs is asked for is not profiled).
pairs | while read -r w p; do
  name=$(basename "$w" .toml)-$p
  wanted=profile-$name
  for pol in $policies oracle; do wanted+=$'\n'"$name-$pol-s1"$'\n'"$name-$pol-s2"; done
  grep -qE -- "$only" <<< "$wanted" || continue
  "$coloc" profile --sim "$p" "$w" --repeat 1 --out "$out/.work/profile-$name" \
    > "$out/profile-$name.txt" 2>&1 || true
  normalize "$out/profile-$name.txt"
  grep -qE -- "$only" <<< "profile-$name" || rm "$out/profile-$name.txt"
done

{
  pairs | while read -r w p; do
    for pol in $policies; do echo "$w $p $pol 1"; done
    echo "$w $p native 2"
  done
  # The oracle: exhaustive on Clovertown's pair, bounded (2000) on NuPoCo's
  # kmeans scenario, and `coloc bench sim`'s 64-configuration search.
  echo "examples/sim/tang-pairs.toml clovertown oracle 1"
  echo "examples/sim/nupoco-kmeans.toml nupoco-amd64 oracle 1"
  echo "crates/harness/src/timing/sim-oracle-4x8.toml opteron48 oracle 1 --oracle-max-configs 64"
} | while read -r w p pol seed rest; do
  # Only the runs asked for (the name `run` gives the run's files).
  if grep -qE -- "$only" <<< "$(basename "$w" .toml)-$p-$pol-s$seed"; then
    # No blank at the end: xargs -L would join the next line to this one.
    echo "$w $p $pol $seed${rest:+ $rest}"
  fi
done | xargs -P "$jobs" -L 1 bash -c 'run "$@"' _

if grep -qE -- "$only" <<< bench-paper-nupoco; then
  "$coloc" bench paper nupoco --repeat 1 --out "$out/.work/paper" \
    > "$out/bench-paper-nupoco.txt" 2>&1
  normalize "$out/bench-paper-nupoco.txt"
fi
rm -rf "$out/.work" "$out/.data"
echo "$(ls "$out" | wc -l) files in $out"
