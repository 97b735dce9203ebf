"""SDK releases as a matrix dimension (issue 16).

One environment per (SDK, release), resolved as of the release's upload date and cached outside
the repo (:mod:`bench.releases.envs`); a long-lived worker per environment runs adapters only
(:mod:`bench.releases.worker`, driven by :mod:`bench.releases.pool`), so the provider, the ledger,
the classification and the results stay in the parent and every release is measured by the same
instrument. This package's ``__init__`` imports nothing: the worker imports it inside an
environment that holds only the SDK and its dependencies.
"""
