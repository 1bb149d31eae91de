"""The scalars of a checkpoint `torch.save` wrote, read without torch and without running anything the file names.

`torch.save` writes a zip archive: ``<archive>/data.pkl`` pickles the object (for LibreYOLO a dict of metadata,
state dicts and optimizer state) and each tensor's bytes are an entry of their own, which the pickle refers to by
persistent id. Knowing which epoch a checkpoint holds needs only the dict's scalars, yet `torch.load` reads every
tensor of the model, its EMA copy and the optimizer and, with ``weights_only=False``, runs whatever the pickle
names. This reader unpickles data.pkl alone and replaces every class and function the pickle names by an inert
placeholder, so nothing from the file runs and no tensor is read; ints, floats, strings and bools come back as
saved. numpy scalars (a numpy float is a ``float``) are rebuilt by numpy's own constructors, which with a container
and bytes are the only names resolved.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

# The only names the pickle may resolve for real: containers and numpy scalars (torch's weights_only loader allows
# the same ones). Everything else becomes an _Inert.
_RESOLVED = {
    ("_codecs", "encode"),  # how pickle protocol 2 writes bytes (a numpy scalar's value)
    ("collections", "OrderedDict"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}


class _Inert:
    """What every other class or function named by the pickle becomes: it accepts any construction, call, state
    and items, and keeps none of them."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> _Inert:
        return super().__new__(cls)

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def __call__(self, *_args: Any, **_kwargs: Any) -> _Inert:
        return _Inert()

    def __setstate__(self, _state: Any) -> None:
        pass

    def __setitem__(self, _key: Any, _value: Any) -> None:
        pass

    def append(self, _value: Any) -> None:
        pass

    def extend(self, _values: Any) -> None:
        pass


class _ScalarsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _RESOLVED:
            return super().find_class(module, name)
        return _Inert

    def persistent_load(self, pid: Any) -> None:  # a tensor's storage: never read
        return None


def checkpoint_scalars(path: Path) -> dict[str, int | float | str | bool] | None:
    """The top-level scalar entries of the dict a zip-format `torch.save` file holds; None when the file is not
    such an archive, holds no single data.pkl, does not unpickle or holds something other than a dict."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(pickles) != 1:
                return None
            with archive.open(pickles[0]) as fh:
                obj = _ScalarsOnly(fh).load()
    except Exception:  # noqa: BLE001 - an unreadable checkpoint counts as absent (the caller says what follows)
        return None
    if not isinstance(obj, dict):
        return None
    return {k: v for k, v in obj.items() if isinstance(k, str) and isinstance(v, (int, float, str, bool))}
