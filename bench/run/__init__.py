"""``bench run`` as a library: a plan of cells (:mod:`bench.run.plan`), the runner that drives
each against the provider (:mod:`bench.run.runner`), the one place a cell's outcome is decided
(:mod:`bench.run.classify`, from :mod:`bench.run.accounting` and :mod:`bench.run.toolcalls`), the
rows it becomes (:mod:`bench.run.rows`), the whole run with its folder, shards and resume
(:mod:`bench.run.suite`, :mod:`bench.run.procs`, :mod:`bench.run.shard`, :mod:`bench.run.rerun`;
on Ray, :mod:`bench.run.cluster`),
what a run planned read back (:mod:`bench.run.runplan`), its limits (:mod:`bench.run.request`),
its progress line (:mod:`bench.run.progress`) and runs as things a user manages
(:mod:`bench.run.runs`).

Imports: core, scenarios, results, sdk, provider, releases, own.
"""
