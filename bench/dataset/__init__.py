"""The published dataset: every committed run (the baseline, i.e. the latest default matrix, and
the release history of each tracked SDK) as one versioned table, with the datasheet, the citation
and the provenance a reader needs to cite a claim at a version (issue 43).

It owns what is published (which runs, which columns, what is scrubbed), how its version is made
(a digest of every cell's deciding values, so it changes when any cell does and only then), and
the loader a notebook uses::

    from bench import dataset
    runs = dataset.load("site/dataset")                       # the newest version published there
    runs = dataset.load("https://example.org/misfit/dataset", version="cells-e3eb90fdde1e")
    run = dataset.load_run("site/dataset", version="cells-e3eb90fdde1e")  # as bench.report.load

Nothing published carries a request body, a prompt, or an absolute path of the machine that made
it (:mod:`bench.dataset.scrub`).

Imports: results, report (the agent labels the notebook's frame carries). Never the CLI.
"""

from bench.dataset.build import Built, DatasetError, build
from bench.dataset.reader import load, load_run

__all__ = ["Built", "DatasetError", "build", "load", "load_run"]
