"""The comparison notebook runs from a clean checkout against a small fresh run and produces
its figures; the committed file carries no outputs (the analysis lives in bench.report)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "compare_frameworks.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, "the notebook has code cells"
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pydantic-ai on one protocol: a control, a fault and a two-point sweep (24 cells, seconds)."""
    scenarios = frozenset({"valid", "malformed_then_valid", "sweep_malformed_00", "sweep_malformed_30"})
    request = SuiteRequest(
        sdks=("pydantic-ai",),
        filters=Filters(protocols=frozenset({"openai-chat"}), variants=frozenset({"default"}), scenarios=scenarios),
        suite="full",
        reps=2,
        results_root=tmp_path_factory.mktemp("notebook-run"),
    )
    return run_suite(request)


@pytest.mark.slow
def test_notebook_executes_and_draws_its_figures(fresh_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISFIT_RUN", str(fresh_run))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3, "heatmap, cost bars and sweep curves"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "sweep points" in text and fresh_run.name in text
