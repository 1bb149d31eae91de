from __future__ import annotations

import numpy as np
import pytest

from tests.tables import dbt_python_model

paired_bootstrap = dbt_python_model("rf100vl_model_comparison").paired_bootstrap


def test_identical_models_are_indistinguishable() -> None:
    a = {f"d{i}": 0.3 + 0.01 * i for i in range(20)}
    c = paired_bootstrap(a, dict(a))
    assert (c.mean_diff, c.ci_low, c.ci_high, c.distinguishable) == (0.0, 0.0, 0.0, False)


def test_constant_shift_is_exact_and_distinguishable() -> None:
    b = {f"d{i}": 0.2 + 0.02 * i for i in range(30)}
    a = {k: v + 0.01 for k, v in b.items()}
    c = paired_bootstrap(a, b)
    assert c.mean_diff == pytest.approx(0.01) and c.ci_low == pytest.approx(0.01) and c.distinguishable


def test_small_gap_in_noise_is_not_distinguishable_and_large_one_is() -> None:
    rng = np.random.default_rng(1)
    b = {f"d{i}": float(v) for i, v in enumerate(rng.uniform(0.2, 0.7, 100))}
    noise = rng.normal(0, 0.03, 100)
    small = {k: v + 0.002 + float(n) for (k, v), n in zip(b.items(), noise, strict=True)}
    large = {k: v + 0.03 + float(n) for (k, v), n in zip(b.items(), noise, strict=True)}
    s, big = paired_bootstrap(small, b), paired_bootstrap(large, b)
    assert s.ci_low < 0 < s.ci_high and not s.distinguishable
    assert big.ci_low > 0 and big.distinguishable
    assert s.ci_low <= s.mean_diff <= s.ci_high
    assert paired_bootstrap(small, b) == s  # deterministic for a seed


def test_only_shared_datasets_count_and_bad_input_is_refused() -> None:
    c = paired_bootstrap({"x": 0.5, "y": 0.4, "z": 0.9}, {"x": 0.4, "y": 0.3})
    assert c.datasets == 2 and c.mean_diff == pytest.approx(0.1)
    with pytest.raises(ValueError, match="share no"):
        paired_bootstrap({"x": 0.1}, {"y": 0.1})
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap({"x": float("nan")}, {"x": 0.1})


def test_dbt_python_models_are_self_contained() -> None:
    """dbt runs its Python models in its own process: they import nothing of the product (bench_assets, resources),
    and the product imports none of them (their code is read only by dbt and by tests)."""
    import ast

    from resources.paths import REPO_ROOT

    models = sorted((REPO_ROOT / "dbt_report" / "models").rglob("*.py"))
    assert models
    for path in models:
        tree = ast.parse(path.read_text())
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        product = [m for m in imported if m.split(".")[0] in ("bench_assets", "resources", "definitions", "tests")]
        assert not product, f"{path.relative_to(REPO_ROOT)} imports {product}: copy what it needs into the model"
    names = [m.name for m in models]
    for path in (REPO_ROOT / "bench_assets").rglob("*.py"):
        text = path.read_text()
        assert not [n for n in names if n in text], f"{path} names a dbt Python model's file"
