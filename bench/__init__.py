"""misfit-bench: what agent SDKs do when the model's answer does not fit the type.

The packages, lowest layer first. A package imports only packages of lower layers (tests/test_layers.py
holds every module to it, imports inside functions included); ``adapters`` (one folder per SDK) is
reached only through entry points (:mod:`bench.sdk.registry`), never imported by this package.
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "tools"),  # the shared vocabulary and small tools; the harness tool
    ("scenarios", "results"),  # what the fake model is told to do; results on disk
    ("sdk",),  # the seam an SDK plugs into, and the registry of SDKs
    ("provider", "releases", "own"),  # the fake model; other SDK releases' environments; a user's agent
    ("node",),  # the TypeScript SDKs' Node workers, supervised as the release workers are
    ("cassettes",),  # real traffic: bench record's proxy, the cassette format, replay with faults
    ("planner",),  # a run's options in, its adapters and cell plans out: what bench run drives
    ("run",),  # bench run: the plans driven, the one classification, the rows, the run's folder
    ("gate",),  # bench gate: a run against a baseline
    ("report",),  # bench report: tables, claims and plots; the release changelog
    ("pick",),  # bench pick: the decision table, ranked under the user's weights
    ("view", "upgrade", "fixture", "dataset"),  # bench view; upgrade decision; pytest fixture; published dataset
    ("publish",),  # bench publish: the static site and the dataset, from the committed runs
    ("cli",),  # the bench command, over all of the above
)
"""Each package's layer; ``adapters/<sdk>/`` may import core, tools, scenarios, results, sdk, own and node."""

ADAPTERS_MAY_IMPORT = ("core", "tools", "scenarios", "results", "sdk", "own", "node")
