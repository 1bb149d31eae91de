"""Standard JSON only, for the annotation files a stranger sends (pure).

Python's json reader accepts two things a COCO file must not hold, silently: a key given twice in one object (the
last one wins: a second `"images": []` empties the split) and the non-standard tokens NaN, Infinity and -Infinity
(anywhere: in `info` as much as in a box). `strict_loads` refuses both with the key, or the token and its line and
column, named.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(rb"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


class StrictJsonError(ValueError):
    """A document that is JSON to Python but not standard JSON; the message says what and where."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        keys = ", ".join(k for k, _ in pairs[:8]) + (" ..." if len(pairs) > 8 else "")
        raise StrictJsonError(f"duplicate key {dup!r} in one object (keys: {keys}); a JSON reader keeps only the "
                              "last value, so the first is lost")
    return out


def _where(raw: bytes, token: str) -> str:
    """`line L column C` of the first bare `token` in `raw` (outside strings, as far as a scan can tell)."""
    for m in _TOKEN.finditer(raw):
        if m.group(1).decode() == token:
            line = raw.count(b"\n", 0, m.start()) + 1
            col = m.start() - (raw.rfind(b"\n", 0, m.start()) + 1) + 1
            return f" at line {line} column {col}"
    return ""


def strict_loads(raw: bytes) -> Any:
    """`json.loads` refusing duplicate keys and NaN/Infinity tokens (StrictJsonError); JSON errors pass through."""
    def constant(token: str) -> Any:
        raise StrictJsonError(f"non-standard JSON token {token}{_where(raw, token)}: JSON has no NaN or Infinity; "
                              "write a number or null")

    return json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=constant)
