"""The upgrade decision across SDK releases: whether to take a release, for an agent or a built-in
adapter (:mod:`bench.upgrade.decision`, the user's ``except`` clauses read by
:mod:`bench.upgrade.excepts`, shown by :mod:`bench.upgrade.render`), which release changed a cell
(:mod:`bench.upgrade.bisect`) and the published history of releases re-measured
(:mod:`bench.upgrade.history`).

Imports: everything below the CLI but view and fixture.
"""
