"""``python -m bench.cli``: the same as the ``bench`` command."""

from bench.cli import main

main()
