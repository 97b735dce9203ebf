"""The seam an SDK plugs into: the :class:`~bench.sdk.adapter.Adapter` interface, one entry point per
SDK naming both its faces (:mod:`bench.sdk.plugin`), the registry that finds them
(:mod:`bench.sdk.registry`), what ``bench list`` shows (:mod:`bench.sdk.listing`), the HTTP
clients a run's cells share (:mod:`bench.sdk.clients`) and the environment of its own an SDK whose
pins conflict with the harness's declares (:mod:`bench.sdk.environment`).

Imports: core, scenarios, results. Never an SDK, never ``adapters``: SDKs are found by entry point.
"""
