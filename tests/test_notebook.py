"""The comparison notebook answers a reader's question: asked (through its MISFIT_* variables) about
a user's own type in a project outside this repository, on two SDKs and a few scenarios, it makes
the run, ranks it, draws the figures that explain the ranking and ends with the conclusion, with no
error and no warning on the way; the committed file carries no outputs."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from bench.pick import Weights, pick
from bench.pick.explain import row_name
from bench.report.build import build_from_run

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "compare_frameworks.ipynb"
MODELS = """
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{3}$")
    amount: Decimal

    @field_validator("amount")
    @classmethod
    def two_decimals(cls, value: Decimal) -> Decimal:
        if value.as_tuple().exponent < -2:
            raise ValueError("amounts have at most two decimals")
        return value


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    lines: list[Line]
"""
WEIGHTS = "wrong=10,empty=10,runaway=5,raised=2,extra_call=0.1"


def test_notebook_is_committed_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, "the notebook has code cells"
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)


@pytest.mark.slow
def test_notebook_answers_the_question_with_no_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "helpdesk"
    (project / "nbdesk").mkdir(parents=True)
    (project / "nbdesk" / "__init__.py").write_text("", encoding="utf-8")
    (project / "nbdesk" / "models.py").write_text(MODELS, encoding="utf-8")
    asked = {
        "MISFIT_TYPE": "nbdesk.models:Ticket",
        "MISFIT_PROJECT": str(project),
        "MISFIT_SDKS": "pydantic-ai,langchain",
        "MISFIT_PROTOCOLS": "openai-chat",
        "MISFIT_SCENARIOS": "valid,wrong_persistent,malformed_persistent,schema_violation_then_valid",
        "MISFIT_WEIGHTS": WEIGHTS,
        "MISFIT_RESULTS": str(tmp_path / "results"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONWARNINGS": "default",  # the kernel shows every warning (deprecations too) on stderr
    }
    for name, value in asked.items():
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = [o.get("text", "") for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
    assert stderr == [], f"the notebook warned: {stderr}"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "your type nbdesk.models:Ticket; pydantic-ai, langchain; openai-chat" in text
    assert "made for this question: " in text and "the run covers the question" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4, "score parts, where failures land, the heatmap, the cost per fault"
    directory = tmp_path / "results" / (tmp_path / "results" / "latest").read_text(encoding="utf-8").strip()
    assert json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["output_type"]["reference"] == (
        "nbdesk.models:Ticket"
    )
    best = pick(build_from_run(directory)[0], Weights().model_copy(update={"raised": 2})).rows[0]
    conclusion = "".join(o["data"].get("text/markdown", "") for o in outputs if o.output_type == "display_data")
    assert conclusion.startswith(f"**Pick {row_name(best)}**: score {best.score:.2f} under weights")
    assert "The run covers everything the question asks." in conclusion
