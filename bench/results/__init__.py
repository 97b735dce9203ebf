"""Results on disk: the columns declared once (:mod:`bench.results.columns`), the typed ``details``
(:mod:`bench.results.details`), a run's folder, tables and manifest (:mod:`bench.results.store`),
shards merged into one run (:mod:`bench.results.merge`), the golden landing matrix
(:mod:`bench.results.golden`) and how rows are named when grouped (:mod:`bench.results.labels`).

Imports: core.
"""
