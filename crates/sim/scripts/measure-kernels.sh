#!/usr/bin/env bash
# Measures the calibration cases of coloc_sim::calibrate on this machine: each
# workload kernel alone at 1 and 2 threads, and pairs of kernels (2 threads
# each) started together, under `native` (Linux places all 4 threads) and
# `equal` (taskset: the first app on CPU 0, the second on CPU 1).
#
# Each case runs REPS times (default 3) and the run with the shortest
# makespan is kept: a shared machine is not quiet (other jobs, and the host's
# clock varying with its own load), and disturbances only ever slow a run
# down. `others` is the CPU time the rest of the machine used during the kept
# run (busy time in /proc/stat minus the kernels' own). To keep other jobs
# off the CPUs, run the script in a cpu cgroup with a high weight, e.g. (v1):
#   mkdir /sys/fs/cgroup/cpu/calib; echo 262144 > /sys/fs/cgroup/cpu/calib/cpu.shares
#   sh -c 'echo $$ > /sys/fs/cgroup/cpu/calib/tasks; exec measure-kernels.sh DIR'
# Output, one line per app of each case (TSV):
#   case  app  kernel  threads  wall_s  others_s
# usage: measure-kernels.sh KERNEL_DIR [REPS] > kvm-2cpu-kernels.tsv
set -euo pipefail
dir=${1:?usage: measure-kernels.sh KERNEL_DIR [REPS]}
reps=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
hz=$(getconf CLK_TCK)
busy() { awk -v hz="$hz" '/^cpu /{ printf "%.3f", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat; }
# run TAG CPUS THREADS KERNEL: one app in the background, timed by /usr/bin/time.
run() {
    local tag=$1 cpus=$2 threads=$3 k=$4
    if [ "$cpus" = all ]; then
        OMP_NUM_THREADS=$threads /usr/bin/time -f "%e %U %S" -o "$out/$tag.time" "$dir/$k" >/dev/null &
    else
        OMP_NUM_THREADS=$threads /usr/bin/time -f "%e %U %S" -o "$out/$tag.time" taskset -c "$cpus" "$dir/$k" >/dev/null &
    fi
}
wall() { cut -d' ' -f1 "$out/$1.time"; }
cpu() { awk '{ print $2 + $3 }' "$out/$1.time"; }

# measure CASE then (CPUS THREADS KERNEL) per app.
measure() {
    local name=$1; shift
    local best_span=1e9 best_line=""
    for _ in $(seq "$reps"); do
        local b0 b1 own=0 span=0 i=0 args=("$@") line=""
        b0=$(busy)
        while [ $i -lt ${#args[@]} ]; do
            run "a$i" "${args[$i]}" "${args[$((i + 1))]}" "${args[$((i + 2))]}"
            i=$((i + 3))
        done
        wait
        b1=$(busy)
        i=0
        while [ $i -lt ${#args[@]} ]; do
            own=$(awk -v a="$own" -v b="$(cpu "a$i")" 'BEGIN { print a + b }')
            span=$(awk -v a="$span" -v b="$(wall "a$i")" 'BEGIN { print (b > a) ? b : a }')
            i=$((i + 3))
        done
        local others
        others=$(awk -v a="$b1" -v b="$b0" -v c="$own" 'BEGIN { printf "%.2f", a - b - c }')
        if awk -v s="$span" -v bs="$best_span" 'BEGIN { exit !(s < bs) }'; then
            best_span=$span line="" i=0
            while [ $i -lt ${#args[@]} ]; do
                line+="$name	$((i / 3))	${args[$((i + 2))]}	${args[$((i + 1))]}	$(wall "a$i")	$others"$'\n'
                i=$((i + 3))
            done
            best_line=$line
        fi
    done
    printf '%s' "$best_line"
}

printf 'case\tapp\tkernel\tthreads\twall_s\tothers_s\n'
kernels=(stream compute share barrier lock)
for k in "${kernels[@]}"; do
    for t in 1 2; do
        measure "solo-$k-$t" all "$t" "$k"
    done
done
pairs=()
for i in "${!kernels[@]}"; do
    for j in "${!kernels[@]}"; do
        if [ "$j" -ge "$i" ]; then
            pairs+=("${kernels[$i]}+${kernels[$j]}")
        fi
    done
done
for p in "${pairs[@]}"; do
    a=${p%+*} b=${p#*+}
    measure "native-$a+$b" all 2 "$a" all 2 "$b"
    measure "equal-$a+$b" 0 2 "$a" 1 2 "$b"
done
