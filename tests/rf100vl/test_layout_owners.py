"""Each on-disk layout of BENCH_HOME is spelled in one module: `runs/` in training/run_store.py, `eval/` in
scoring/eval_store.py (as datasets/store.py owns `datasets/`). Read from the source: a string literal naming one of
their files, or a path built with `/ "runs"` or `/ "eval"`, anywhere else in bench_assets/ fails with its place."""

from __future__ import annotations

import ast

from tests.conftest import REPO

OWNERS = {"runs": "bench_assets/rf100vl/training/run_store.py", "eval": "bench_assets/rf100vl/scoring/eval_store.py"}
# File names of each layout (suffixes for the fingerprinted ones) that no other module may spell.
NAMES = {"runs": ("stats.json", "result.json", "bench_status.json", "train_spec.json", "signature.json", "child.log"),
         "eval": (".score.json", ".predictions.json.gz", ".predictions.meta.json", "CURRENT.score",
                  "CURRENT.predictions")}


def _docstring(node: ast.AST) -> ast.Constant | None:
    """The docstring constant of a module, class or function, if it has one."""
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            return first.value
    return None


def spellings(source: str) -> list[tuple[int, str, str]]:
    """(line, layout, what) of every place `source` spells a layout it does not own: a string constant naming one
    of the layout's files (docstrings aside), or a path joined with the layout's folder name. One walk: it visits a
    node's parent before the node, so a docstring is known as one before it is reached."""
    skip: set[int] = set()
    found = []
    for node in ast.walk(ast.parse(source)):
        doc = _docstring(node)
        if doc is not None:
            skip.add(id(doc))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [(node.lineno, layout, name) for layout, names in NAMES.items() for name in names
                      if node.value == name or node.value.endswith(name) and name.startswith(".")]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
            if node.right.value in OWNERS:
                found.append((node.lineno, node.right.value, f'/ "{node.right.value}"'))
    return sorted(found)


def test_the_layout_finder_sees_literals_and_path_joins_but_not_docstrings() -> None:
    source = ('"""Writes stats.json."""\nA = "stats.json"\nB = home / "eval" / m\nC = f"{fp}.score.json"\n'
              'D = x + ".score.json"\nE = "a stats.json word"\n')
    found = sorted((line, layout) for line, layout, _ in spellings(source))
    assert found == [(2, "runs"), (3, "eval"), (4, "eval"), (5, "eval")]


def test_runs_and_eval_are_spelled_only_by_their_owners() -> None:
    offenders = []
    for path in sorted((REPO / "bench_assets").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for line, layout, what in spellings(path.read_text()):
            if OWNERS[layout] != rel:
                offenders.append(f"{rel}:{line}: {what} (ask {OWNERS[layout]})")
    assert not offenders, "\n".join(offenders)
