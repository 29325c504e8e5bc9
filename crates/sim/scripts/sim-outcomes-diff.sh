#!/usr/bin/env bash
# What happened in two sim-reference.sh outputs, compared: each trace less
# the why (plans' `note`, `reasons` and `verdicts`, which trace version 2
# turned from English into data: docs/trace-format.md, Reasons and
# verdicts) and the header's `version` and `coloc_version`; every other
# file as it is. What stays is what the simulator did: admissions,
# placements, DoPs, memory and scheduling settings, observations, exits.
#
#   crates/sim/scripts/sim-outcomes-diff.sh OUT_A OUT_B
#
# Prints `diff -r` of the two (empty when the outcomes are the same) and
# exits as diff does: 0 the same, 1 different.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OUT_A OUT_B" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in a b; do
  src=$([ $side = a ] && echo "$1" || echo "$2")
  mkdir "$tmp/$side"
  for f in "$src"/*; do
    name=$(basename "$f")
    case "$name" in
      *.trace.jsonl)
        jq -c 'del(.version, .coloc_version, .plan.note, .plan.reasons, .plan.verdicts)
               | if .plan.apps then .plan.apps |= map(del(.reasons)) else . end' \
          "$f" > "$tmp/$side/$name" ;;
      *) cp "$f" "$tmp/$side/$name" ;;
    esac
  done
done
cd "$tmp" && diff -r a b
