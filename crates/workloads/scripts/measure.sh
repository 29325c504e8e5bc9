#!/usr/bin/env bash
# Measures the built-in kernels on this machine with their default arguments:
#   1. each kernel alone with OMP_NUM_THREADS=1 and 2 (wall time and metric);
#   2. two 2-thread `barrier` runs one after the other, then both at once
#      (oversubscribed when the machine has 2 cores): the effect coloc avoids.
# Every line also shows `others`: CPU seconds the rest of the machine used
# during that run (busy time in /proc/stat minus the kernels' own). A shared
# machine is not quiet; a row with others > 0.1 s was disturbed.
# usage: measure.sh KERNEL_DIR [barrier args...]
#   KERNEL_DIR holds the installed kernels (coloc_workloads::install_dir(),
#   e.g. ~/.cache/coloc/kernels/<hash>); extra args go to the barrier pair.
set -euo pipefail
dir=${1:?usage: measure.sh KERNEL_DIR [barrier args...]}
shift
barrier_args=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

hz=$(getconf CLK_TCK)
busy() { awk -v hz="$hz" '/^cpu /{ printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat; }
now() { date +%s.%N; }
metric() { sed -n 's/^coloc-metric: //p' "$1"; }
# CPU seconds (user + system) a run recorded by /usr/bin/time used.
cpu() { awk '{ print $2 + $3 }' "$1"; }
timed() { local tag=$1; shift; /usr/bin/time -f "%e %U %S" -o "$out/$tag.time" "$@" >"$out/$tag.out"; }

printf '%-8s %7s %8s %8s %8s  %s\n' kernel threads wall_s cpu_s others metric
for k in stream compute share barrier lock; do
    for t in 1 2; do
        b0=$(busy)
        OMP_NUM_THREADS=$t timed solo "$dir/$k"
        b1=$(busy)
        own=$(cpu "$out/solo.time")
        printf '%-8s %7s %8.3f %8.2f %8.2f  %s\n' "$k" "$t" "$(cut -d' ' -f1 "$out/solo.time")" \
            "$own" "$(echo "$b1 - $b0 - $own" | bc)" "$(metric "$out/solo.out")"
    done
done

export OMP_NUM_THREADS=2
b0=$(busy); t0=$(now)
timed a "$dir/barrier" "${barrier_args[@]}"
timed b "$dir/barrier" "${barrier_args[@]}"
b1=$(busy); t1=$(now)
timed c "$dir/barrier" "${barrier_args[@]}" &
timed d "$dir/barrier" "${barrier_args[@]}" &
wait
b2=$(busy); t2=$(now)
seq=$(echo "$t1 - $t0" | bc)
con=$(echo "$t2 - $t1" | bc)
seq_others=$(echo "$b1 - $b0 - $(cpu "$out/a.time") - $(cpu "$out/b.time")" | bc)
con_others=$(echo "$b2 - $b1 - $(cpu "$out/c.time") - $(cpu "$out/d.time")" | bc)
echo "barrier pair, 2 threads each, one after the other: $seq s (others $seq_others s; $(metric "$out/a.out"), $(metric "$out/b.out"))"
echo "barrier pair, 2 threads each, at the same time:    $con s (others $con_others s; $(metric "$out/c.out"), $(metric "$out/d.out"))"
echo "slowdown (at the same time / one after the other): $(echo "scale=1; $con / $seq" | bc)"
