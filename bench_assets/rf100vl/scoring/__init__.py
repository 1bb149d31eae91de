"""Scoring: COCO AP at maxDets 500 of saved detections against the canonical ground truth (`coco.py`, the API and
the parity audit, over `validation.py`, `backends.py` (the fast and reference evaluators), `results.py` and
`loading.py`), the layout of `BENCH_HOME/eval/` with the fingerprints of predictions and scores (`eval_store.py`),
rescoring, and the sanity judgements on training and scoring. Builds on `datasets`."""
