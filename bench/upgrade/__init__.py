"""The upgrade decision across SDK releases: which release changed a cell (:mod:`bench.upgrade.bisect`)
and the published history of releases re-measured (:mod:`bench.upgrade.history`).

Imports: everything below the CLI but view and fixture.
"""
