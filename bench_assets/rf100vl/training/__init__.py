"""Training: LibreYOLO's families as the pinned version describes them, the recipes and the model registry, the
pretrained weights a model starts from (the `BENCH_HOME/pretrained/` layout, importing a file, fetching from the hub),
the stack invariants, the pure decisions about one training run (model key, variant, batches, run signature), the
layout of `BENCH_HOME/runs/`, launching a child under a wall-clock limit, and the children themselves (`child/`: the
only code that imports torch and LibreYOLO). Builds on `datasets`."""
