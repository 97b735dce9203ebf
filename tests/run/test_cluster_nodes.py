"""``bench run --executor ray`` on a cluster of two nodes: two raylets on this machine, started by
Ray's own test cluster (``ray.cluster_utils.Cluster``), one CPU each. The cells spread over both
nodes and the table is the in-process one; a node lost mid-run (its raylet and its workers gone,
as when a machine dies) loses no cell and doubles none: its unit runs again on the node left.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402  (after the skip: Ray is the optional [ray] extra)

from bench.results.store import load_run, read_manifest  # noqa: E402
from bench.run import cluster  # noqa: E402
from bench.run.runner import CellRecord  # noqa: E402
from bench.run.suite import SuiteRequest, run_suite  # noqa: E402

KEY = ["outcome", "model_calls", "exception_type", "output_retries", "transport_retries", "sdk_version"]


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Cluster]:
    """The head (this process's driver joins it) and a second node; started after
    tests/conftest.py put the test plugin on PYTHONPATH, which both nodes' workers inherit."""
    for name, value in cluster.LOCAL_CLUSTER_ENV.items():  # as bench starts a local cluster
        os.environ.setdefault(name, value)
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, log_to_driver=False)
    try:
        yield nodes
    finally:
        ray.shutdown()
        nodes.shutdown()


def _table(directory: Path) -> pd.DataFrame:
    return load_run(directory)["runs"].set_index("cell_id")[KEY].sort_index()


def _run(root: Path, reps: int, executor: str, on_record: Callable[[CellRecord], None] = lambda cell: None) -> Path:
    procs = 1 if executor == "local" else None  # the reference table in this process: no SDK imports again
    request = SuiteRequest(sdks=("openai-parse",), reps=reps, results_root=root, executor=executor, procs=procs)
    return run_suite(request, on_record=on_record)


@pytest.mark.slow
def test_cells_spread_over_both_nodes_and_the_table_is_the_in_process_one(
    tmp_path: Path, two_nodes: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "CELLS_PER_TASK", 10)  # 54 runnable cells: six tasks over two nodes
    local = _run(tmp_path / "local", 2, "local")
    on_ray = _run(tmp_path / "ray", 2, "ray")
    report = read_manifest(on_ray)["ray"]
    assert report["nodes"] == 2 and report["tasks"] == 6 and report["retried"] == 0, report
    pd.testing.assert_frame_equal(_table(local), _table(on_ray))


def _remove_the_second_node_once_cells_arrive(two_nodes: Cluster, received: list[str], removed: list[str]) -> None:
    deadline = time.monotonic() + 300
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    [second] = list(two_nodes.worker_nodes)
    two_nodes.remove_node(second, allow_graceful=False)
    removed.append(second.node_id)


@pytest.mark.slow
def test_a_node_lost_mid_run_loses_no_cell_and_doubles_none(
    tmp_path: Path, two_nodes: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "CELLS_PER_TASK", 162)  # two tasks, one per node: the loss lands mid-task
    local = _run(tmp_path / "local", 12, "local")
    received: list[str] = []
    removed: list[str] = []
    remover = threading.Thread(
        target=_remove_the_second_node_once_cells_arrive, args=(two_nodes, received, removed), daemon=True
    )
    remover.start()
    directory = _run(tmp_path / "ray", 12, "ray", on_record=lambda cell: received.append(cell.run["cell_id"]))
    remover.join(timeout=30)
    assert removed, "the second node was not removed"
    manifest = read_manifest(directory)
    assert manifest["status"] == "complete" and manifest["ray"]["retried"] == 1, manifest["ray"]
    runs = load_run(directory)["runs"]
    assert runs.cell_id.is_unique and len(runs) == manifest["cells_planned"] == len(received)
    pd.testing.assert_frame_equal(_table(local), _table(directory))
