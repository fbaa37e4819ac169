#!/usr/bin/env bash
# Run detection, health (idle and under load) and the benchmark on a machine with a GPU, and
# pack what they printed into OUTDIR/validation.tar.gz (default OUTDIR: $OUT or ./out).
# Usage (repo root, source tree, no install needed): scripts/gpu_validation.sh [python3]
set -u
cd "$(dirname "$0")/.."
py="${1:-python3}"
outdir="${OUT:-./out}"
work="$(mktemp -d)"
export PYTHONPATH=. PYTHONUNBUFFERED=1
run() { local name="$1"; shift; echo "== $name: $*"; "$@" >"$work/$name" 2>"$work/$name.err"; echo "rc=$?" >>"$work/$name.err"; }

date -u +%FT%TZ >"$work/date.txt"
nvidia-smi >"$work/nvidia-smi.txt" 2>&1
nvidia-smi -q >"$work/nvidia-smi-q.txt" 2>&1
run nvml_raw.json "$py" scripts/nvml_raw_readings.py
run detect.txt "$py" -m gpuselect detect
run detect.json "$py" -m gpuselect detect --format json
run health-idle.txt "$py" -m gpuselect health --verbose
run health-idle.json "$py" -m gpuselect health --format json
run bench-quick.json "$py" -m gpuselect bench --quick --format json
# Health under load: PCIe width/generation and throttling are judged only while the GPU works.
"$py" -m gpuselect bench --device cuda:0 --format json >"$work/bench-full.json" 2>"$work/bench-full.json.err" &
bench_pid=$!
sleep 25
run health-load.json "$py" -m gpuselect health --format json --no-probe
run health-load.txt "$py" -m gpuselect health --verbose --no-probe
wait $bench_pid; echo "rc=$?" >>"$work/bench-full.json.err"
"$py" - "$work/bench-full.json" >"$work/bench-full.txt" 2>&1 <<'PY'
import json, sys
from gpuselect.bench.model import BenchReport, DeviceResult, Timing, TrainStep
doc = json.load(open(sys.argv[1]))
devs = []
for d in doc["devices"]:
    d = dict(d)
    d["train_steps"] = [TrainStep(**s) for s in d["train_steps"]]
    for k in ("matmul_detail", "bandwidth_detail", "transfer_detail"):
        d[k] = {n: Timing(**t) for n, t in d[k].items()}
    devs.append(DeviceResult(**d))
r = doc["report"]
from gpuselect.bench.text import format_bench
print(format_bench(BenchReport(devs, r["quick"], r["torch_version"], r["cancelled"], r["duration_s"])))
PY
mkdir -p "$outdir"
tar -C "$work" -czf "$outdir/validation.tar.gz" .
echo "packed $(ls "$work" | wc -l) files into $outdir/validation.tar.gz"
