"""Bootstrap intervals on a speedup ratio (median items/s of a library over the reference's on one transform).

Each side is a list of groups: one group per repeat (a fresh process or run), holding that repeat's timed-pass
throughputs. A resample draws the repeats with replacement, then the passes within each drawn repeat with
replacement (a two-level bootstrap: the spread between processes counts, not only the spread between passes),
and takes the ratio of the two resampled medians. The interval is the percentile interval of N_BOOT resamples,
seeded, so the same data always gives the same interval. Groups of unequal length are pooled into one group
(one-level bootstrap over the passes). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_BOOT = 2000
SEED = 0


def _resampled_medians(groups: Sequence[Sequence[float]], rng: np.random.Generator, n_boot: int) -> np.ndarray:
    if len({len(g) for g in groups}) != 1:
        groups = [[x for g in groups for x in g]]
    data = np.asarray(groups, dtype=np.float64)  # (repeats, passes)
    r, k = data.shape
    reps = rng.integers(0, r, size=(n_boot, r))
    passes = rng.integers(0, k, size=(n_boot, r, k))
    return np.median(data[reps[:, :, None], passes].reshape(n_boot, r * k), axis=1)


def ratio_interval(ours: Sequence[Sequence[float]], reference: Sequence[Sequence[float]], *, level: float = 0.95,
                   n_boot: int = N_BOOT, seed: int = SEED) -> tuple[float, float] | None:
    """(low, high) of the percentile bootstrap interval of median(ours) / median(reference); None when a side
    has no value or a non-positive one."""
    flat_a = [x for g in ours for x in g]
    flat_b = [x for g in reference for x in g]
    if not flat_a or not flat_b or min(flat_a) <= 0 or min(flat_b) <= 0:
        return None
    rng = np.random.default_rng(seed)
    ratios = (_resampled_medians([g for g in ours if g], rng, n_boot)
              / _resampled_medians([g for g in reference if g], rng, n_boot))
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)
