"""``python -m bench.node install``: install the Node side from its lock (the README's first
command runs it). Where Node is missing or older than 20.6 it says so and exits 0: the Python
matrix still runs and the TypeScript cells are ``unsupported`` with that reason. A failing
``npm ci`` exits 3."""

from __future__ import annotations

import sys

from bench.node.setup import NodeMissing, NodeSetupError, install, unavailable


def main(argv: list[str]) -> int:
    if argv != ["install"]:
        print("usage: python -m bench.node install", file=sys.stderr)
        return 2
    try:
        print(install())
    except NodeSetupError as error:
        print(f"misfit-bench: {error}", file=sys.stderr)
        return 0 if isinstance(error, NodeMissing) else 3
    if (reason := unavailable()) is not None:  # installed, yet not runnable here (an old Node)
        print(f"misfit-bench: the TypeScript cells will be unsupported: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
