#!/usr/bin/env bash
# Measures the built-in kernels on this machine with their default arguments:
#   1. each kernel alone with OMP_NUM_THREADS=1 and 2 (wall time and metric);
#   2. two 2-thread `barrier` runs one after the other, then both at once
#      (oversubscribed when the machine has 2 cores): the effect coloc avoids.
# usage: measure.sh KERNEL_DIR [barrier args...]
#   KERNEL_DIR holds the installed kernels (coloc_workloads::install_dir(),
#   e.g. ~/.cache/coloc/kernels/<hash>); extra args go to both barrier runs.
set -euo pipefail
dir=${1:?usage: measure.sh KERNEL_DIR [barrier args...]}
shift
barrier_args=("$@")

now() { date +%s.%N; }
metric() { sed -n 's/^coloc-metric: //p' "$1"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '%-8s %7s %9s %s\n' kernel threads wall_s metric
for k in stream compute share barrier lock; do
    for t in 1 2; do
        t0=$(now)
        OMP_NUM_THREADS=$t "$dir/$k" >"$out/solo"
        t1=$(now)
        printf '%-8s %7s %9.3f %s\n' "$k" "$t" "$(echo "$t1 - $t0" | bc)" "$(metric "$out/solo")"
    done
done

export OMP_NUM_THREADS=2
t0=$(now)
"$dir/barrier" "${barrier_args[@]}" >"$out/a"
"$dir/barrier" "${barrier_args[@]}" >"$out/b"
t1=$(now)
"$dir/barrier" "${barrier_args[@]}" >"$out/c" &
"$dir/barrier" "${barrier_args[@]}" >"$out/d" &
wait
t2=$(now)
seq=$(echo "$t1 - $t0" | bc)
con=$(echo "$t2 - $t1" | bc)
echo "barrier x2, 2 threads each: one after the other ${seq} s ($(metric "$out/a"), $(metric "$out/b"))"
echo "barrier x2, 2 threads each: at the same time   ${con} s ($(metric "$out/c"), $(metric "$out/d"))"
echo "slowdown of the pair (at once / one after the other): $(echo "scale=1; $con / $seq" | bc)"
