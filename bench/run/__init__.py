"""``bench run`` as a library: the plans :mod:`bench.planner` made, driven. The runner drives each
cell against the provider (:mod:`bench.run.runner`), the one place a cell's outcome is decided
(:mod:`bench.run.classify`, from :mod:`bench.run.accounting` and :mod:`bench.run.toolcalls`), the
rows it becomes (:mod:`bench.run.rows`), the whole run with its folder, shards and resume
(:mod:`bench.run.suite`, :mod:`bench.run.procs`, :mod:`bench.run.shard`, :mod:`bench.run.rerun`;
on Ray, :mod:`bench.run.cluster`), what it catches around the SDKs (:mod:`bench.run.capture`,
:mod:`bench.run.egress`), what a run planned read back (:mod:`bench.run.runplan`), its progress
line (:mod:`bench.run.progress`) and runs as things a user manages (:mod:`bench.run.runs`).
Nothing here derives a plan: :mod:`bench.run.plan` is the planner's face for the plan type.

Imports: core, scenarios, results, sdk, provider, releases, own, cassettes, planner.
"""
