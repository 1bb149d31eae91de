"""Agreement with the published RGB micro numbers: Spearman against scipy, same-winner and outlier logic on
hand-made tables (a planted outlier fails until it is explained), the shape of both committed published tables (x86
paper run, macOS website run), choosing a table by name and the outlier explanations filtered by table."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from bench_assets.augbench import agreement as ag
from bench_assets.augbench.catalog import paper_set

ALB = "albumentationsx"


def _table(alb: dict[str, float], others: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    out = {(ALB, t): v for t, v in alb.items()}
    for lib, cells in others.items():
        out.update({(lib, t): v for t, v in cells.items()})
    return out


PUB = _table({"A": 1000, "B": 1000, "C": 1000, "D": 1000, "E": 1000},
             {"torchvision": {"A": 100, "B": 500, "C": 2000, "D": 4000, "E": 800},
              "kornia": {"A": 50, "B": 200, "C": 300, "D": 900, "E": 1500}})


def _ours(scale: float = 3.7, **changes: float) -> dict[tuple[str, str], float]:
    """The published table on a machine `scale` times faster (same ratios), with (library__transform=ratio) changes."""
    out = {k: v * scale for k, v in PUB.items()}
    for key, ratio in changes.items():
        lib, t = key.split("__")
        out[(lib, t)] = out[(ALB, t)] * ratio
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spearman_equals_scipy_on_skewed_data_with_ties(seed: int) -> None:
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    x = rng.lognormal(0, 2.5, 40)  # heavy right tail, several decades
    y = x * rng.lognormal(0, 1.5, 40)
    x[5] = x[6] = x[7]  # ties on both sides
    y[10] = y[11]
    got = ag.spearman(x, y)
    assert got == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    # rank-based: any monotone transform of either side gives the same figure
    assert ag.spearman(np.log(x), y**3) == pytest.approx(got, abs=1e-12)
    assert ag.spearman([1, 2, 3], [1, 1, 1]) is None and ag.spearman([1], [2]) is None


def test_identical_ratios_on_another_machine_agree_fully() -> None:
    res = ag.compare(_ours(), PUB, {})
    assert res.passes and not res.outliers and res.same_winner == 1.0
    assert {lib.library: (lib.pairs, lib.spearman) for lib in res.libraries} == {
        "torchvision": (5, pytest.approx(1.0)), "kornia": (5, pytest.approx(1.0))}
    # a published library we did not measure is listed with no pairs and not judged
    res = ag.compare(_ours(), {**PUB, ("pillow", "A"): 900.0, ("pillow", "B"): 90.0}, {})
    assert {lib.library: lib.pairs for lib in res.libraries} == {"torchvision": 5, "kornia": 5, "pillow": 0}
    assert [lib.library for lib in res.judged_libraries] == ["torchvision", "kornia"] and res.passes
    assert res.not_measured == (("pillow", "A"), ("pillow", "B"))
    assert "not measured" in res.markdown()


def test_same_winner_counts_pairs_whose_faster_library_flips() -> None:
    # torchvision/B: published 0.5 (albx faster) -> 1.2 (torchvision faster); within 3x, so not an outlier
    # kornia/C: published 0.3 -> 0.87: same winner (albx), 2.9x off is within 3x
    from scipy.stats import spearmanr

    res = ag.compare(_ours(torchvision__B=1.2, kornia__C=0.87), PUB, {})
    flips = [(p.transform, p.library) for p in res.pairs if not p.same_winner]
    assert flips == [("B", "torchvision")]
    by_lib = {lib.library: lib for lib in res.libraries}
    assert by_lib["torchvision"].same_winner == pytest.approx(4 / 5)
    assert by_lib["kornia"].same_winner == 1.0
    assert res.same_winner == pytest.approx(9 / 10)
    assert not res.outliers
    p = next(p for p in res.pairs if (p.transform, p.library) == ("C", "kornia"))
    assert p.factor == pytest.approx(2.9) and not p.outlier
    # torchvision ranks changed (B moves above E) -> Spearman below 1 but still monotone enough here
    assert by_lib["torchvision"].spearman == pytest.approx(spearmanr([0.1, 1.2, 2, 4, 0.8],
                                                                     [0.1, 0.5, 2, 4, 0.8]).statistic)
    assert res.passes  # 90% same winner meets the goal exactly


def test_a_tie_only_matches_a_tie() -> None:
    res = ag.compare(_ours(kornia__E=1.0), PUB, {})
    p = next(p for p in res.pairs if (p.transform, p.library) == ("E", "kornia"))
    assert (p.winner_ours, p.winner_published, p.same_winner) == ("tie", "kornia", False)


def test_planted_outlier_fails_until_explained(tmp_path) -> None:
    ours = _ours(kornia__A=0.005)  # published 0.05: 10x off, same winner, still the lowest kornia ratio
    res = ag.compare(ours, PUB, {})
    assert [(p.transform, p.library) for p in res.outliers] == [("A", "kornia")]
    assert res.outliers[0].factor == pytest.approx(10.0)
    assert res.same_winner == 1.0 and all(lib.meets_spearman for lib in res.judged_libraries)
    assert not res.passes and res.checks["every outlier explained"] is False
    assert "**unexplained**" in res.markdown() and "FAIL" in res.markdown()

    # an explanation for another library or transform does not count
    assert not ag.compare(ours, PUB, {("A", "torchvision"): "x", ("B", "kornia"): "y"}).passes

    path = tmp_path / "outliers.csv"
    path.write_text("transform,library,table,explanation\nA,kornia,,\"kornia crops on a padded copy, measured\"\n"
                    "B,pillow,,   \n")
    explanations = ag.load_explanations(path)
    assert explanations == {("A", "kornia"): "kornia crops on a padded copy, measured"}  # blank ones dropped
    res = ag.compare(ours, PUB, explanations)
    assert res.passes and res.outliers and not res.unexplained
    md = res.markdown(details=True)
    assert "kornia crops on a padded copy, measured" in md and "PASS" in md
    doc = res.to_dict()
    assert json.loads(json.dumps(doc))["outliers"][0]["explanation"] == "kornia crops on a padded copy, measured"


def test_outliers_both_ways_and_spearman_goal_per_library() -> None:
    ours = _ours(torchvision__A=0.0333, torchvision__D=0.4)  # A: 3.0x slower-ratio edge; D: 10x lower
    res = ag.compare(ours, PUB, {})
    gaps = {(p.transform, p.library): p.log_gap for p in res.outliers}
    assert set(gaps) == {("A", "torchvision"), ("D", "torchvision")}
    assert all(g < -math.log(3) for g in gaps.values())
    tv = next(lib for lib in res.libraries if lib.library == "torchvision")
    assert tv.spearman is not None and tv.spearman < ag.SPEARMAN_GOAL and not tv.meets_spearman
    assert res.checks[f"Spearman >= {ag.SPEARMAN_GOAL:g} for every library"] is False


def test_too_few_pairs_cannot_meet_the_spearman_goal() -> None:
    pub = {k: v for k, v in PUB.items() if k[1] in ("A", "B")}
    res = ag.compare({k: v * 2 for k, v in pub.items()}, pub, {})
    assert all(lib.pairs == 2 and lib.spearman is None for lib in res.judged_libraries)
    assert not res.passes
    empty = ag.compare({}, PUB, {})
    assert not empty.pairs and empty.same_winner is None and not empty.passes
    assert len(empty.not_measured) == len(PUB)


def test_cells_missing_on_either_side_are_skipped_and_listed() -> None:
    ours = _ours()
    del ours[(ALB, "C")]  # no reference: neither torchvision/C nor kornia/C can be compared
    ours[("pillow", "Z")] = 10.0  # not published
    res = ag.compare(ours, PUB, {})
    assert {(p.transform, p.library) for p in res.pairs} == {(t, lib) for t in "ABDE"
                                                              for lib in ("torchvision", "kornia")}
    assert res.not_measured == ((ALB, "C"),) and res.not_published == (("pillow", "Z"),)
    with pytest.raises(ValueError, match="positive and finite"):
        ag.compare({**ours, ("kornia", "A"): float("nan")}, PUB, {})


def test_load_published_refuses_bad_rows(tmp_path) -> None:
    head = "transform,library,items_per_s,published_name\n"
    for body, msg in [("A,imgaug,10,A\n", "unknown library 'imgaug'"), ("A,kornia,0,A\n", "positive and finite"),
                      ("A,kornia,inf,A\n", "positive and finite"), ("A,kornia,fast,A\n", "not a number"),
                      ("A,kornia,1,A\nA,kornia,2,A\n", "listed twice")]:
        path = tmp_path / "p.csv"
        path.write_text(head + body)
        with pytest.raises(ValueError, match=msg):
            ag.load_published(path)


EXPECTED = {  # table: (source folder, renamed published names, pairs per library against albumentationsx)
    "x86": ("results/published/paper-rgb-micro-c4-standard-16-2026-05-04/", {},
            {"torchvision": 26, "kornia": 51, "pillow": 24}),
    "macos": ("results/published/website-rgb-micro-macos-2026-04-29/",
              {"RandomCrop128": "RandomCrop224", "CenterCrop128": "CenterCrop224"},
              {"torchvision": 27, "kornia": 52, "pillow": 22}),
}


def test_the_published_tables_are_x86_by_default_and_macos_by_name() -> None:
    assert set(ag.PUBLISHED) == set(EXPECTED) and ag.DEFAULT_PUBLISHED == "x86"
    assert (ag.PUBLISHED_CSV, ag.PUBLISHED_META) == ag.PUBLISHED["x86"]
    assert ag.PUBLISHED["x86"][0].name == "published_rgb_micro_cpu_x86.csv"
    assert ag.PUBLISHED["macos"][0].name == "published_rgb_micro_cpu.csv"
    x86, macos = ag.load_published(table="x86"), ag.load_published(table="macos")
    assert ag.load_published() == x86 == ag.load_published(ag.PUBLISHED["x86"][0]) and x86 != macos
    assert ag.load_published(ag.PUBLISHED["macos"][0], table="x86") == macos  # an explicit path wins
    assert ag.load_meta() == ag.load_meta(table="x86") != ag.load_meta(table="macos")
    for call in (lambda: ag.load_published(table="arm"), lambda: ag.load_meta(table="arm"),
                 lambda: ag.load_explanations(table="arm"), lambda: ag.compare({}, table="arm")):
        with pytest.raises(ValueError, match="unknown published table 'arm'"):
            call()

    # compare reads the named table (and its explanations) unless given them
    assert ag.compare(x86).table == "x86" and ag.compare(x86, table="macos").table == "macos"
    assert ag.compare(macos, macos, {}).table is None
    assert {lib.library: lib.pairs for lib in ag.compare(macos, table="macos").libraries} == EXPECTED["macos"][2]
    assert {lib.library: lib.pairs for lib in ag.compare(macos, x86, table="macos").libraries} == {
        "torchvision": 26, "kornia": 51, "pillow": 22}  # published= overrides the table's medians
    ours = {**macos, ("torchvision", "HorizontalFlip"): macos[("torchvision", "HorizontalFlip")] * 10}
    on_macos = ag.compare(ours, table="macos")  # a committed macOS explanation covers it
    assert [(p.transform, p.library) for p in on_macos.outliers] == [("HorizontalFlip", "torchvision")]
    assert on_macos.outliers[0].explanation and not on_macos.unexplained
    rotate = {**macos, ("pillow", "Rotate"): macos[("pillow", "Rotate")] * 10}
    assert not ag.compare(rotate, table="macos").unexplained  # explained for the macOS table ...
    assert ag.compare(rotate, macos, table="x86").unexplained  # ... not for the x86 one
    assert ag.compare(ours, source={"k": 1}, table="macos").to_dict()["table"] == "macos"


def test_explanations_are_filtered_by_table(tmp_path) -> None:
    path = tmp_path / "outliers.csv"
    path.write_text("transform,library,table,explanation\n"
                    "A,kornia,x86,x86 only\n"
                    "A,kornia,macos,macos only\n"
                    "B,torchvision,,\"any table, no table named\"\n"
                    "C,pillow,,generic\n"
                    "C,pillow,macos,macos wins over generic\n"
                    "D,kornia,x86,  \n")
    assert ag.load_explanations(path) == ag.load_explanations(path, table="x86") == {
        ("A", "kornia"): "x86 only", ("B", "torchvision"): "any table, no table named", ("C", "pillow"): "generic"}
    assert ag.load_explanations(path, table="macos") == {
        ("A", "kornia"): "macos only", ("B", "torchvision"): "any table, no table named",
        ("C", "pillow"): "macos wins over generic"}
    legacy = tmp_path / "legacy.csv"  # no table column: every row holds for every table
    legacy.write_text("transform,library,explanation\nA,kornia,old\n")
    assert ag.load_explanations(legacy, table="x86") == ag.load_explanations(legacy, table="macos") == {
        ("A", "kornia"): "old"}
    assert ag.load_explanations(tmp_path / "missing.csv") == {}
    for body, msg in [("A,kornia,arm,x\n", "unknown table 'arm'"),
                      ("A,kornia,x86,x\nA,kornia,x86,y\n", "explained twice for table x86"),
                      ("A,kornia,,x\nA,kornia,,y\n", r"explained twice for table \(any\)")]:
        bad = tmp_path / "bad.csv"
        bad.write_text("transform,library,table,explanation\n" + body)
        with pytest.raises(ValueError, match=msg):
            ag.load_explanations(bad, table="x86")


@pytest.mark.parametrize("table", list(EXPECTED))
def test_published_csv_shape(table: str) -> None:
    folder, renames, pairs = EXPECTED[table]
    csv_path, _ = ag.PUBLISHED[table]
    rows = list(csv.DictReader(csv_path.open(newline="")))
    assert rows and list(rows[0]) == ["transform", "library", "items_per_s", "published_name", "note"]
    ours = {r.transform: set(r.libraries) for r in paper_set("rgb")}
    published = ag.load_published(table=table)
    assert len(published) == len(rows)  # no duplicates, every value parsed
    for r in rows:
        assert r["transform"] in ours, r
        assert r["library"] in ("albumentationsx", "torchvision", "kornia", "pillow"), r
        assert r["library"] in ours[r["transform"]], r  # a library our paper set runs for that transform
        v = float(r["items_per_s"])
        assert math.isfinite(v) and v > 0, r
        assert r["items_per_s"] == f"{v:.3f}", r
        assert r["published_name"], r
    transforms = {t for _, t in published}
    for t in transforms:
        if any(lib != ALB and (lib, t) in published for lib in ag.LIBRARIES):
            assert (ALB, t) in published, t
    renamed = {r["published_name"]: r["transform"] for r in rows if r["published_name"] != r["transform"]}
    assert renamed == renames
    meta = ag.load_meta(table=table)
    assert len(meta["commit"]) == 40 and meta["retrieved"] == "2026-12-01"
    assert meta["repository"] == "https://github.com/albumentations-team/benchmark"
    assert len(meta["source_paths"]) == 5 and all(p.startswith(folder) for p in meta["source_paths"])
    assert meta["counts"]["rows"] == len(rows)
    for lib in ag.LIBRARIES:
        assert meta["counts"][lib] == sum(r["library"] == lib for r in rows), lib
    assert meta["counts"]["comparable_pairs_vs_albumentationsx"] == pairs
    early = sorted(f"{r['transform']}/{r['library']}" for r in rows if r["note"].startswith("early_stopped"))
    assert early == sorted(c.split(" (")[0] for c in meta["early_stopped_cells"]["cells"])
    assert meta["hardware_stated"]["platform"] and meta["hardware_stated"]["cpu_count"] == 16
    assert set(meta["library_versions_stated"]) == set(ag.LIBRARIES)


def test_x86_table_spot_values_and_provenance() -> None:
    """A few cells read by hand from the source JSON files (median_throughput, 3 decimals)."""
    pub = ag.load_published(table="x86")
    assert pub[("torchvision", "Resize")] == 978.893  # 978.8928524201257
    assert pub[("pillow", "Equalize")] == 881.682  # 881.6823376096509
    assert pub[("albumentationsx", "UnsharpMask")] == 906.090  # 906.0902007004582
    assert pub[("kornia", "MedianBlur")] == 2.512  # early stopped: 1 / 0.398 s per image
    meta = ag.load_meta(table="x86")
    assert meta["hardware_stated"]["machine"].startswith("c4-standard-16")
    assert meta["library_versions_stated"]["albumentationsx"]["albumentationsx"] == "2.2.6"
    assert meta["published_run"]["benchmark_params"]["num_runs"] == 3
    assert ("albumentationsx", "CenterCrop224") not in pub  # the paper run has no CenterCrop


def test_outliers_csv_has_a_table_column() -> None:
    outliers = list(csv.DictReader(ag.OUTLIERS_CSV.open(newline="")))
    assert ag.OUTLIERS_CSV.read_text().splitlines()[0] == "transform,library,table,explanation"
    assert all(r["table"] in ("", *ag.PUBLISHED) for r in outliers)
    macos = [r for r in outliers if r["table"] == "macos"]
    assert len(macos) >= 15 and all(r["explanation"].strip() for r in macos)
    assert len(ag.load_explanations(table="macos")) == len(macos) + sum(r["table"] == "" for r in outliers)


@pytest.mark.parametrize("table", list(EXPECTED))
def test_published_compared_with_itself_passes(table: str) -> None:
    pub = ag.load_published(table=table)
    res = ag.compare(pub, pub, {})
    assert res.passes and res.same_winner == 1.0
    assert {lib.library: lib.pairs for lib in res.libraries} == EXPECTED[table][2]
