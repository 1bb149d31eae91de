"""What the UI shows reads as written: the UI renders descriptions as markdown, where a bare placeholder such as
`<name>` is an HTML tag and vanishes ("datasets/<name>/<version>/" showed as "datasets///"). Placeholders belong in
code spans. Checked over every asset, asset check, job, sensor and schedule description of the code location."""

from __future__ import annotations

import re

CODE_SPAN = re.compile(r"`[^`]*`")
BARE_TAG = re.compile(r"</?[A-Za-z_][\w -]*>")


def bare_placeholders(text: str | None) -> list[str]:
    return BARE_TAG.findall(CODE_SPAN.sub("", text or ""))


def test_the_rule_catches_what_the_ui_eats() -> None:
    assert bare_placeholders("stored under datasets/<name>/<version>/") == ["<name>", "<version>"]
    assert bare_placeholders("stored under `datasets/<name>/<version>/`") == []
    assert bare_placeholders("mAP < 0.5 and recall > 0.1") == []


def test_no_description_has_a_bare_placeholder() -> None:
    from definitions import defs

    graph = defs.resolve_asset_graph()
    found = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        found[f"asset {key.to_user_string()}"] = bare_placeholders(node.description)
        for spec in node.check_keys:
            found[f"check {spec.name}"] = bare_placeholders(graph.get_check_spec(spec).description)
    for kind, items in (("job", defs.jobs), ("sensor", defs.sensors), ("schedule", defs.schedules)):
        for item in items or ():
            found[f"{kind} {item.name}"] = bare_placeholders(getattr(item, "description", None))
    bad = {where: tags for where, tags in found.items() if tags}
    assert not bad, f"wrap these placeholders in backticks: {bad}"
    assert len(found) > 50  # the walk saw the location, not an empty list
