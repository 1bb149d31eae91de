"""Scoring: COCO AP at maxDets 500 of saved detections against the canonical ground truth (`coco.py`: validation,
the fast and reference backends, their parity audit), the layout of `BENCH_HOME/eval/` with the fingerprints of
predictions and scores, rescoring, and the sanity judgements on training and scoring. Builds on `datasets`."""
