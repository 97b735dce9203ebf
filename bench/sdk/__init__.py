"""The seam an SDK plugs into: the :class:`~bench.sdk.adapter.Adapter` interface, one entry point per
SDK naming both its faces (:mod:`bench.sdk.plugin`), the registry that finds them
(:mod:`bench.sdk.registry`), what ``bench list`` shows (:mod:`bench.sdk.listing`) and the HTTP
clients a run's cells share (:mod:`bench.sdk.clients`).

Imports: core, scenarios, results. Never an SDK, never ``adapters``: SDKs are found by entry point.
"""
