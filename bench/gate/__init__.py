"""``bench gate``: a run compared with a baseline cell by cell (:mod:`bench.gate.compare`), with exact
tests for stochastic cells (:mod:`bench.gate.stats`, :mod:`bench.gate.power`), the reps a
baseline needs (:mod:`bench.gate.plan`), the CI renderings (:mod:`bench.gate.output`) and the
committed baseline's update (:mod:`bench.gate.baseline`).

Imports: core, scenarios, results, sdk, run.
"""
