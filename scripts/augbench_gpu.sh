#!/usr/bin/env bash
# The augbench GPU rows, on a machine with a CUDA device (and NVIDIA DALI installed for the DALI cells):
#   scripts/augbench_gpu.sh [--num-items N] [--num-runs N]
# Results land in BENCH_HOME/augbench/<config>/ like the CPU rows; copy that folder back and `bench report`
# to merge them into the paper tables (the consistency check keeps GPU and CPU tables apart: each config is
# its own table with its own hardware label).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
python=.venv/bin/python
$python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible to torch')"
for cfg in configs/paper/*-gpu.yaml; do
  .venv/bin/bench augbench run --config "$cfg" --no-report "$@"
done
.venv/bin/bench report
