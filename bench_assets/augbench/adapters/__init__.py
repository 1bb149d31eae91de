"""Library adapters for augbench: `get_adapter(name)` -> an object with the `base.Adapter` contract.

Importing this package imports no augmentation library (nor torch): each adapter module imports its library
inside its methods, so a machine without Kornia or DALI can still plan and run the other libraries.
"""

from __future__ import annotations

import importlib

from bench_assets.augbench.adapters.base import Adapter, SpecError, Unsupported

ADAPTERS = {
    "albumentationsx": ("bench_assets.augbench.adapters.albumentationsx", "AlbumentationsXAdapter"),
    "torchvision": ("bench_assets.augbench.adapters.torchvision_lib", "TorchvisionAdapter"),
    "kornia": ("bench_assets.augbench.adapters.kornia_lib", "KorniaAdapter"),
    "pillow": ("bench_assets.augbench.adapters.pillow_lib", "PillowAdapter"),
    "dali": ("bench_assets.augbench.adapters.dali", "DaliAdapter"),
}
LIBRARIES = tuple(ADAPTERS)

__all__ = ["ADAPTERS", "LIBRARIES", "Adapter", "SpecError", "Unsupported", "get_adapter"]


def get_adapter(name: str) -> Adapter:
    try:
        module, cls = ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown augbench library {name!r}; known: {', '.join(ADAPTERS)}") from None
    return getattr(importlib.import_module(module), cls)()
