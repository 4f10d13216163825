#!/usr/bin/env bash
# One prepared check for a GPU machine: the full audit of the real GPU stack from this checkout, saved as JSON (the
# real-GPU test fixture) and as Markdown (what a bug report would carry), plus nvidia-smi for comparison; then the
# node check as Slurm would run it, with device 0 named so that the per-device path runs even on a one-GPU machine.
#   usage: scripts/gpu-check.sh OUTDIR          (runs with PYTHONPATH=<checkout>; needs no install, no network)
# Exit status: that of the audit (0 ok, 1 findings, 2 usage, 3 could not audit), after everything is written.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}

start=$(date +%s)
"$python" -m envaudit audit --format json --output "$out/gpu-report.json" --timeout "${ENVAUDIT_TIMEOUT:-120}"
rc=$?
"$python" -m envaudit check "$out/gpu-report.json" --format markdown --output "$out/gpu-report.md"
"$python" -m envaudit check "$out/gpu-report.json" --format text >"$out/gpu-report.txt"
nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" >"$out/nvidia-smi.txt"
echo "gpu-check: audit exit $rc in $(( $(date +%s) - start )) s; files in $out"
mkdir -p "$out/health"
hstart=$(date +%s%N)
"$python" -m envaudit health --device 0 --prometheus-dir "$out/health" >"$out/health.txt"
echo "gpu-check: health exit $? in $(( ($(date +%s%N) - hstart) / 1000000 )) ms: $(cat "$out/health.txt")"
exit "$rc"
