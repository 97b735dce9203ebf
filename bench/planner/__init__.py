"""Planning a run: the command's options (:class:`SuiteRequest`) in, the adapters and a finished
list of cell plans out (:func:`plan_cells`), each plan saying what runs, on which scenario, where
(in-process or a release environment) and how its answers come (a built-in task, the user's own
agent or type, tasks drawn from cassettes). ``bench run``, ``bench pick --type``, ``bench upgrade``,
the pytest fixture and the executors (processes, Ray) all drive that one list.

The step in the order it happens: the adapters and the scenarios (:mod:`bench.planner.adapters`:
built-in SDKs, own agents, ``--type``, cassette tasks), the release environments
(:mod:`bench.planner.releases`), the cells expanded and sharded (:mod:`bench.planner.cells`), and
every thing an option named kept or said (:mod:`bench.planner.narrowing`); the request's limits
(:mod:`bench.planner.limits`) and how a manifest records it (:mod:`bench.planner.request`).
:mod:`bench.run` drives the plans and writes the rows; it knows nothing of how a plan was derived
(tests/test_layers.py holds this package below it: nothing here imports ``bench.run``).

Imports: core, scenarios, results, sdk, provider, releases, own, cassettes.
"""

from bench.planner import limits
from bench.planner.adapters import load_adapters, select_scenarios
from bench.planner.cells import CellPlan, Filters, expand, in_shard, parse_shard, shard_of
from bench.planner.plan import drive_here, plan_cells
from bench.planner.request import (
    DEFAULT_CALL_CAP,
    CellCacheRequest,
    RunOptions,
    SuiteError,
    SuiteRequest,
    builtin_names,
    request_from_json,
    request_to_json,
)

__all__ = [
    "DEFAULT_CALL_CAP",
    "CellCacheRequest",
    "CellPlan",
    "Filters",
    "RunOptions",
    "SuiteError",
    "SuiteRequest",
    "builtin_names",
    "drive_here",
    "expand",
    "in_shard",
    "limits",
    "load_adapters",
    "parse_shard",
    "plan_cells",
    "request_from_json",
    "request_to_json",
    "select_scenarios",
    "shard_of",
]
