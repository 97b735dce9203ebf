"""``bench pick``: which SDK and output mode to choose, answered from a finished run.

The package owns the choice, not the measurement: it reads the cells a run's :class:`bench.report.
build.Report` already holds (the matrix, the cost of each fault, the scenario families) and turns
them into one decision table, ranked by one score under weights the user states.

- :mod:`bench.pick.weights`: the weights (``[tool.bench.pick]`` in pyproject.toml, ``--weight``);
- :mod:`bench.pick.table`: per SDK x mode x variant, per fault family, what the caller gets, what
  a fault costs, the score, the ranking and what the ranking cannot see;
- :mod:`bench.pick.render`: the decision in one sentence (:func:`lead_sentence`: ``bench pick``,
  the reports and ``bench view`` open with it) and the table for a 120-column terminal, markdown
  and HTML (the reports open with them: ``bench report`` hands :func:`lead` to
  :func:`bench.report.files.write_report`);
- :mod:`bench.pick.question`: a reader's question (type, SDKs, scenarios, weights) and the run
  that answers it, never a narrower one than it says (the notebook starts from it);
- :mod:`bench.pick.explain`: why the ranking is what it is: each score taken apart, where each
  row's cells landed, their figures, and the conclusion in sentences.
"""

from __future__ import annotations

from bench.pick.render import lead, lead_sentence, render_html, render_markdown, render_terminal
from bench.pick.table import Pick, PickRow, pick, tied_with_top
from bench.pick.weights import PickInputError, Weights, load_weights, parse_weights, resolve_weights

__all__ = [
    "Pick",
    "PickInputError",
    "PickRow",
    "Weights",
    "lead",
    "lead_sentence",
    "load_weights",
    "parse_weights",
    "pick",
    "render_html",
    "render_markdown",
    "render_terminal",
    "resolve_weights",
    "tied_with_top",
]
