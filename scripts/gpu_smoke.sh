#!/usr/bin/env bash
# GPU smoke check (run once on a GPU machine): 2 lanes on one GPU, yolo9-t, 3 epochs of two mini datasets
# with CUDA graphs and the disk cache (recipes/rf100vl/gpu-smoke/yolo9.json, non-conformant by design).
# Prints, per run: the lane, peak VRAM allocated/reserved, whether graph capture happened, time and valid mAP.
# Then one smoke campaign per family with a smoke recipe (recipes/rf100vl/smoke/: train, predict, score on mini-tiny,
# each in its own BENCH_HOME): its exit code and seconds (docs/models.md).
# Usage: scripts/gpu_smoke.sh   (sets up .venv when missing; ~5 min including set-up on an H200, plus the families)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export BENCH_HOME=${BENCH_HOME:-$(mktemp -d /tmp/bench-gpu-smoke.XXXX)}
export BENCH_GPUS=${BENCH_GPUS:-0} BENCH_JOBS_PER_GPU=${BENCH_JOBS_PER_GPU:-2} BENCH_THREADS_PER_LANE=${BENCH_THREADS_PER_LANE:-4}
.venv/bin/python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('GPU:', torch.cuda.get_device_name(0), 'torch', torch.__version__)"
.venv/bin/bench demo --datasets-only > "$BENCH_HOME/datasets.log" 2>&1
.venv/bin/bench train --model yolo9-t --datasets mini-shapes,mini-dense --recipe gpu-smoke 2>&1 | tee "$BENCH_HOME/train.log" | grep -E "lane|epoch|ok|FAILED" || true
.venv/bin/python - <<'PY'
import json, os, pathlib
home = pathlib.Path(os.environ["BENCH_HOME"])
rows = []
for stats in sorted(home.glob("runs/yolo9-t/*/*/stats.json")):
    s = json.loads(stats.read_text())
    d = s["device"]
    rows.append((s["dataset"], d["lane"], d["peak_vram_allocated_mb"], d["peak_vram_reserved_mb"],
                 d["cuda_graph_captured"], round(s["wall_seconds"], 1), s["valid_mAP50_95"], s["batch"]))
print("dataset      lane  peak alloc MB  peak reserved MB  graph captured  train s  valid mAP50-95  batch")
for r in rows:
    print(f"{r[0]:12s} {r[1]!s:5s} {r[2]!s:14s} {r[3]!s:17s} {r[4]!s:15s} {r[5]!s:8s} {r[6]!s:15s} {r[7]}")
lanes = {r[1] for r in rows}
print(json.dumps({"runs": len(rows), "distinct_lanes": len(lanes), "all_captured": all(r[4] for r in rows)}))
PY

# One smoke campaign per family (2 epochs on mini-tiny, the GPU lane): exit 0 means trained, predicted, scored and
# every check passed.
models=$(.venv/bin/python -c "from bench_assets.rf100vl.training.models import smoke_models; print(*smoke_models())")
status=0
for model in $models; do
    start=$(date +%s)
    if BENCH_HOME="$BENCH_HOME/family-$model" .venv/bin/bench campaign --model "$model" --datasets mini-tiny \
            --recipe smoke > "$BENCH_HOME/campaign-$model.log" 2>&1; then rc=0; else rc=$?; status=1; fi
    echo "family smoke $model: exit $rc, $(( $(date +%s) - start )) s (log: $BENCH_HOME/campaign-$model.log)"
done
exit $status
