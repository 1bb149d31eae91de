"""One hypothesis profile for the property tests: deterministic (derandomize: the same examples on every run and
every machine, so a failure reproduces and CI never flakes), no deadline (scoring a dense split takes tens of
milliseconds one time and more under load; a deadline would fail on a busy core, not on a wrong number), no example
database (nothing written beside the repo). `max_examples` keeps the whole directory well under a minute on one
core; `HYPOTHESIS_PROFILE=props-deep` runs ten times as many examples by hand."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("props", derandomize=True, deadline=None, database=None, max_examples=25)
settings.register_profile("props-deep", parent=settings.get_profile("props"), max_examples=250)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "props"))
