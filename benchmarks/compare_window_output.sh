#!/usr/bin/env bash
# The window's whole output (window_manifest.py) at a base revision and at the working tree, on the
# demo and, with --slime, on real slime #2014..#2125, per-PR mode too; prints each manifest's sha256 and
# the diff (empty when a refactor of sync/ changed nothing). CPU-heavy with --slime: take the lock.
#   bash benchmarks/compare_window_output.sh BASE_REV [--slime] [--scratch DIR]
set -euo pipefail
base=${1:?usage: compare_window_output.sh BASE_REV [--slime] [--scratch DIR]}; shift
which=(--demo); scratch=/tmp/vime-window-compare
while [ $# -gt 0 ]; do
  case $1 in --slime) which=(--demo --slime) ;; --scratch) scratch=$2; shift ;; *) echo "unknown argument $1" >&2; exit 2 ;; esac
  shift
done
root=$(cd "$(dirname "$0")/.." && pwd); py=$root/.venv/bin/python
before=$scratch/base-checkout
rm -rf "$before"; mkdir -p "$before"
git -C "$root" archive "$base" | tar -x -C "$before"
status=0
for w in "${which[@]}"; do
  for mode in "" --per-pr; do
    name=${w#--}${mode:+-per-pr}
    # the same --scratch path both times: the manifest keeps no absolute path, but this makes it certain
    PYTHONPATH=$before "$py" "$before/benchmarks/window_manifest.py" "$w" $mode --scratch "$scratch/run" --out "$scratch/$name.base.json"
    PYTHONPATH=$root "$py" "$root/benchmarks/window_manifest.py" "$w" $mode --scratch "$scratch/run" --out "$scratch/$name.head.json"
    if diff -u "$scratch/$name.base.json" "$scratch/$name.head.json" > "$scratch/$name.diff"; then
      echo "$name: identical ($(sha256sum < "$scratch/$name.head.json" | cut -c1-16))"
    else
      echo "$name: DIFFERS, see $scratch/$name.diff"; status=1
    fi
  done
done
exit $status
