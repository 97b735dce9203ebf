"""A third-party adapter module that fails at import for a reason other than a missing SDK
(tests/sdk/test_registry.py): the registry says so in one line instead of a traceback."""

raise RuntimeError("the adapter's settings file is missing")
