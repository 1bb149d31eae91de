"""The product's run coordinator: runs queued without a priority get the one their family's function gives; both
instance templates name the same coordinator; a home written before the coordinator moved into the platform is
upgraded when it is opened, its own settings kept."""

from __future__ import annotations

from pathlib import Path

import yaml

from bench_assets.platform.cluster.layout import ClusterState, dagster_yaml
from bench_assets.platform.instance import prepare_home
from bench_assets.platform.instance_template import template_run_coordinator
from bench_assets.platform.run_queue import first_priority, function_name, resolve
from bench_assets.rf100vl.campaign.priority import longest_first_priority, run_priority


def test_the_first_family_that_orders_a_run_gives_its_priority_and_an_explicit_one_is_kept() -> None:
    never = lambda tags: None  # noqa: E731
    by_model = lambda tags: "9" if tags.get("model") == "m" else None  # noqa: E731
    assert first_priority({"model": "m"}, [never, by_model]) == "9"
    assert first_priority({"model": "m", "dagster/priority": "1"}, [by_model]) is None  # kept as it is
    assert first_priority({"model": "x"}, [never, by_model]) is None
    assert first_priority({}, []) is None


def test_longest_first_orders_dataset_model_runs_only() -> None:
    images = {"a": 120, "b": None}.get
    assert longest_first_priority({"dagster/partition": "a|yolo9-t"}, images) == "120"
    assert longest_first_priority({"dagster/partition": "b|yolo9-t"}, images) is None  # no stored version
    assert longest_first_priority({"dagster/partition": "a"}, images) is None  # a dataset run
    assert longest_first_priority({}, images) is None


def test_both_instance_templates_name_the_coordinator_and_the_family_function() -> None:
    block = template_run_coordinator()
    assert (block["module"], block["class"]) == ("bench_assets.platform.run_queue", "PriorityRunCoordinator")
    assert function_name(run_priority) in block["config"]["priorities"]
    assert all(callable(resolve(name)) for name in block["config"]["priorities"])
    state = ClusterState(home="/h", home_id="x", code_hash="c", postgres_port=5, redis_port=6, webserver_port=7)
    cluster = yaml.safe_load(dagster_yaml(state, max_concurrent_runs=3))["run_coordinator"]
    assert cluster["module"] == block["module"] and cluster["class"] == block["class"]
    assert cluster["config"] == {**block["config"], "dequeue_interval_seconds": 2}


def test_a_home_from_before_the_move_is_upgraded_with_its_settings_kept(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    old = {"run_coordinator": {"module": "bench_assets.rf100vl.run_queue", "class": "LongestFirstRunCoordinator",
                               "config": {"max_concurrent_runs": 2}},
           "concurrency": {"runs": {"max_concurrent_runs": 7}}, "telemetry": {"enabled": False}}
    (home / "dagster" / "dagster.yaml").write_text(yaml.safe_dump(old))
    prepare_home(home)
    cfg = yaml.safe_load((home / "dagster" / "dagster.yaml").read_text())
    assert cfg["run_coordinator"]["module"] == "bench_assets.platform.run_queue"
    assert cfg["run_coordinator"]["config"]["max_concurrent_runs"] == 2  # the home's own setting
    assert cfg["run_coordinator"]["config"]["priorities"] == template_run_coordinator()["config"]["priorities"]
    assert cfg["concurrency"] == old["concurrency"] and cfg["telemetry"] == old["telemetry"]
    current = (home / "dagster" / "dagster.yaml").read_text()
    prepare_home(home)  # nothing more to do: the file is left as it is
    assert (home / "dagster" / "dagster.yaml").read_text() == current


def test_the_clusters_daemon_and_webserver_load_the_code_from_its_one_code_server() -> None:
    """Their workspace names the cluster's code server (a grpc_server entry), never workspace.yaml's python file:
    with the file each would start code servers of its own, and the daemon a new one every minute."""
    from bench_assets.platform.cluster.layout import LOCATION_NAME, cluster_workspace_yaml

    repo_workspace = yaml.safe_load((Path(__file__).resolve().parents[2] / "workspace.yaml").read_text())
    assert LOCATION_NAME == repo_workspace["load_from"][0]["python_file"]["location_name"]
    assert yaml.safe_load(cluster_workspace_yaml(45123)) == {
        "load_from": [{"grpc_server": {"host": "127.0.0.1", "port": 45123, "location_name": LOCATION_NAME}}]}
    old = {"home": "/h", "home_id": "x", "code_hash": "y", "postgres_port": 1, "redis_port": 2, "webserver_port": 3}
    state = ClusterState.from_dict(old)  # a state.json written before the cluster had a code server loads
    assert state.code_server_port == 0
    assert state.ports == {"postgres": 1, "redis": 2, "code-server": 0, "webserver": 3}  # `status` shows these
