"""Rounds: the libraries of a config measured again and again, each time in a fresh process, interleaved in a
seeded random order, so a drift of the machine (another job starting, the clock settling, the page cache)
spreads over every library instead of landing on whichever runs last.

Round r (1-based) runs every library once, in the order `round_orders(libraries, rounds, seed)[r - 1]`: a shuffle
fixed by (seed, r) through SHA-256, stable across machines and Python versions. Each run is tagged with its
round, position and the round's order (`schedule_tags`), and the repeat it appends records them
(`schedule_from_tags`), so the order every figure was measured in can be read back from the result files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

TAG_PREFIX = "augbench/"


def round_orders(libraries: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")

    def key(r: int, lib: str) -> bytes:
        return hashlib.sha256(f"augbench-round:{seed}:{r}:{lib}".encode()).digest()

    return [sorted(libraries, key=lambda lib, r=r: key(r, lib)) for r in range(1, rounds + 1)]


def schedule_tags(round_no: int, position: int, order: Sequence[str], seed: int) -> dict[str, str]:
    return {f"{TAG_PREFIX}round": str(round_no), f"{TAG_PREFIX}position": str(position),
            f"{TAG_PREFIX}order": ",".join(order), f"{TAG_PREFIX}order_seed": str(seed),
            f"{TAG_PREFIX}process": "fresh"}


def schedule_from_tags(tags: Mapping[str, str]) -> dict[str, Any] | None:
    """The schedule a run's tags carry (None for a run outside rounds, e.g. one partition from the UI)."""
    if f"{TAG_PREFIX}round" not in tags:
        return None
    return {"round": int(tags[f"{TAG_PREFIX}round"]), "position": int(tags[f"{TAG_PREFIX}position"]),
            "order": tags[f"{TAG_PREFIX}order"].split(","), "order_seed": int(tags[f"{TAG_PREFIX}order_seed"]),
            "process": tags.get(f"{TAG_PREFIX}process", "")}
