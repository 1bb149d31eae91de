"""Datasets: the RF100-VL catalogue and suites, where a dataset's data comes from (local folder or tar, the Hugging
Face mirror, the `rf100vl` package, the generated `mini` suite, the inbox), its verification and normalisation, the
version lock and the canonical store under `BENCH_HOME/datasets/` (`store.py` owns that layout), with what must hold
before a version becomes CURRENT. Pure Python; no Dagster, no torch."""
