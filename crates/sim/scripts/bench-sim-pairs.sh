#!/usr/bin/env bash
# Two builds' `coloc bench sim` figures, run in alternating pairs, as
# medians over the pairs (docs/simulator.md, Speed): events per CPU second
# per policy and oracle configurations per CPU second.
#
#   crates/sim/scripts/bench-sim-pairs.sh BASE_COLOC NEW_COLOC [PAIRS] [OUT_DIR]
#
# Pair i runs BASE then NEW when i is odd, NEW then BASE when it is even,
# so that neither build always runs first (the order of a pair moved a
# single run's figure by up to a third). BASE_ARGS and NEW_ARGS are added
# to each build's `bench sim` (a build from before `--seconds` takes none;
# each run of such a build is one run of each workload). Every output is
# kept in OUT_DIR (default: a new temporary directory, named at the end);
# the table gives per policy each build's median [least-greatest] over the
# pairs and the median of the pairs' ratios NEW/BASE. It reads the columns
# both formats share: a policy's line's ninth field (events per CPU
# second) and the oracle line's "(X per CPU second)".
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BASE_COLOC NEW_COLOC [PAIRS] [OUT_DIR]" >&2; exit 2; }
base=$1 new=$2 pairs=${3:-10}
out=${4:-$(mktemp -d /tmp/bench-sim-pairs.XXXXXX)}
mkdir -p "$out"

# One build's run: its output file and the figures it printed, one
# `pair build what per_cpu_s` line each.
figures() {
  local pair=$1 build=$2 file=$3
  awk -v pair="$pair" -v build="$build" '
    /^oracle:/ {
      if (match($0, /\([0-9.]+ per CPU second\)/)) {
        split(substr($0, RSTART + 1, RLENGTH), m, " ")
        print pair, build, "oracle", m[1]
      }
      next
    }
    NF >= 11 && $2 ~ /^[0-9]+$/ && $9 ~ /^[0-9.]+$/ { print pair, build, $1, $9 }
  ' "$file"
}

for i in $(seq "$pairs"); do
  if (( i % 2 )); then order="base new"; else order="new base"; fi
  for b in $order; do
    if [ "$b" = base ]; then bin=$base args=${BASE_ARGS:-}; else bin=$new args=${NEW_ARGS:-}; fi
    # shellcheck disable=SC2086 # the extra arguments are words
    "$bin" bench sim $args > "$out/$b-$i.txt" 2> "$out/$b-$i.err"
    figures "$i" "$b" "$out/$b-$i.txt" >> "$out/figures.txt"
  done
  echo "pair $i of $pairs done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

# Median of the numbers on standard input.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-10s %28s %28s %12s\n' "" "base per CPU s" "new per CPU s" "new/base"
for what in $(awk '{print $3}' "$out/figures.txt" | awk '!seen[$0]++'); do
  side() {
    awk -v b="$1" -v w="$what" '$2 == b && $3 == w {print $4}' "$out/figures.txt"
  }
  spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f-%.0f", lo, hi}'; }
  ratios=$(awk -v w="$what" '$3 == w {v[$1 " " $2] = $4; p[$1]}
    END {for (i in p) if ((i " base") in v && (i " new") in v) print v[i " new"] / v[i " base"]}' \
    "$out/figures.txt")
  printf '%-10s %12.0f [%13s] %12.0f [%13s] %11.3fx\n' "$what" \
    "$(side base | median)" "$(side base | spread)" \
    "$(side new | median)" "$(side new | spread)" "$(median <<< "$ratios")"
done
echo "outputs: $out (load at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
