"""The Node side of the harness (issue 41): TypeScript SDKs driven as Node processes.

What it owns: finding Node and the locked ``node/node_modules`` (:mod:`bench.node.setup`, and
``python -m bench.node install``, which runs ``npm ci`` with the committed lock), the long-lived
Node workers and their supervision (:mod:`bench.node.pool`: the release workers' pool and
JSON-lines protocol, bench.releases, with Node as the interpreter), and the adapter base class a
TypeScript SDK's adapter derives from (:mod:`bench.node.adapter`): its cells run in a worker
over the same provider, and are ``unsupported`` with a one-line reason where Node or its
packages are missing. This ``__init__`` imports nothing.
"""
