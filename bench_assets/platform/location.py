"""Loading a code location from its Python file, the way `dagster -f FILE` does.

The CLI is a client of the code location, like the Dagster CLI: it loads the file named in workspace.yaml rather
than importing the composition module by name, so nothing under `bench_assets/` imports `definitions`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import dagster as dg


class LocationError(RuntimeError):
    pass


def workspace_python_file(workspace: Path) -> Path:
    """The `python_file.relative_path` of the workspace's single code location, resolved against the file."""
    import yaml

    doc = yaml.safe_load(workspace.read_text())
    entries = [e["python_file"] for e in doc.get("load_from", []) if "python_file" in e]
    if len(entries) != 1:
        raise LocationError(f"{workspace}: load_from must name exactly one python_file (found {len(entries)})")
    entry = entries[0]
    rel = entry["relative_path"] if isinstance(entry, dict) else entry
    return (workspace.parent / rel).resolve()


def load_definitions(python_file: Path) -> dg.Definitions:
    """The one `Definitions` object at module scope of `python_file` (imported once per process)."""
    python_file = python_file.resolve()
    name = python_file.stem
    module = sys.modules.get(name)
    if module is None or Path(getattr(module, "__file__", "") or "").resolve() != python_file:
        spec = importlib.util.spec_from_file_location(name, python_file)
        if spec is None or spec.loader is None:
            raise LocationError(f"{python_file}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    found = [v for v in vars(module).values() if isinstance(v, dg.Definitions)]
    if len(found) != 1:
        raise LocationError(f"{python_file}: expected one Definitions object at module scope, found {len(found)}")
    return found[0]
