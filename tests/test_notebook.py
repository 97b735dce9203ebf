"""The comparison notebook answers a reader's question: asked (through its MISFIT_* variables) about
a user's own type in a project outside this repository, on two SDKs and a few scenarios, it makes
the run, ranks it, draws the figures that explain the ranking and ends with the conclusion, with no
error and no warning on the way; the committed file carries no outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from bench.pick import Weights, lead_sentence, pick
from bench.report.build import build_from_run
from bench.results.store import read_table
from tests.own.test_typed_invoice_project import EXAMPLE, INVOICE

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
    }
    outputs = _execute(asked, monkeypatch)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "your type nbdesk.models:Ticket; pydantic-ai, langchain; openai-chat" in text
    assert "made for this question: " in text and "the run covers the question" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4, "score parts, where failures land, the heatmap, the cost per fault"
    directory = tmp_path / "results" / (tmp_path / "results" / "latest").read_text(encoding="utf-8").strip()
    assert json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["output_type"]["reference"] == (
        "nbdesk.models:Ticket"
    )
    table = pick(build_from_run(directory)[0], Weights().model_copy(update={"raised": 2}))
    conclusion = "".join(o["data"].get("text/markdown", "") for o in outputs if o.output_type == "display_data")
    assert conclusion.startswith(f"**{lead_sentence(table)}**")  # bench pick's own sentence
    assert "The run covers everything the question asks." in conclusion


def _execute(asked: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The committed notebook run top to bottom under the ``asked`` variables: its code cells'
    outputs, after asserting that no cell raised (no traceback) and nothing was written to stderr."""
    for name, value in (asked | {"JUPYTER_PLATFORM_DIRS": "1", "PYTHONWARNINGS": "default"}).items():
        monkeypatch.setenv(name, value)  # PYTHONWARNINGS: the kernel shows every warning on stderr
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = [o.get("text", "") for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
    assert stderr == [], f"the notebook warned: {stderr}"
    return outputs


CHECKS = """
def euro_only(invoice) -> str | None:
    return None if invoice.currency.value == "EUR" else f"billed in {invoice.currency.value}, not EUR"
"""


def _invoice_project(tmp_path: Path) -> Path:
    project = tmp_path / "billing"
    project.mkdir()
    assert not project.resolve().is_relative_to(NOTEBOOK.parents[1])
    (project / "nbinvoice.py").write_text(INVOICE, encoding="utf-8")
    (project / "nbchecks.py").write_text(CHECKS, encoding="utf-8")
    (project / "audited.json").write_text(json.dumps(EXAMPLE), encoding="utf-8")
    return project


@pytest.mark.slow
def test_the_notebook_takes_the_example_and_check_bench_pick_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invoice of issue 45 point 4, from a project outside the repository: two-decimal
    field_validators, a model_validator that the total is the sum of the lines, and an audited
    total no derived answer meets (``Audited``: ``bench pick --type`` names ``--example FILE``).
    Asked with MISFIT_EXAMPLE and MISFIT_CHECK (``example=``, ``check=`` in the question cell), the
    notebook makes the run with that example as the right answer and that check, and ends with
    the conclusion, no traceback on the way."""
    project = _invoice_project(tmp_path)
    asked = {
        "MISFIT_TYPE": "nbinvoice:Audited",
        "MISFIT_EXAMPLE": "audited.json",
        "MISFIT_CHECK": "nbchecks:euro_only",
        "MISFIT_PROJECT": str(project),
        "MISFIT_SDKS": "pydantic-ai",
        "MISFIT_PROTOCOLS": "openai-chat",
        "MISFIT_SCENARIOS": "valid,wrong_persistent,malformed_persistent",
        "MISFIT_RESULTS": str(tmp_path / "results"),
    }
    outputs = _execute(asked, monkeypatch)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "your type nbinvoice:Audited; pydantic-ai; openai-chat" in text
    assert "made for this question: " in text and "the run covers the question" in text
    directory = tmp_path / "results" / (tmp_path / "results" / "latest").read_text(encoding="utf-8").strip()
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["request"]["output_type"] == {
        "reference": "nbinvoice:Audited", "example": "audited.json", "check": "nbchecks:euro_only"
    }  # fmt: skip
    assert manifest["output_type"]["valid"] == EXAMPLE
    runs = read_table(directory, "runs").to_pandas()
    assert set(runs.loc[runs["scenario"] == "valid", "outcome"]) == {"ok"}
    assert set(runs.loc[runs["scenario"] == "wrong_persistent", "outcome"]) == {"wrong"}  # the check judged
    conclusion = "".join(o["data"].get("text/markdown", "") for o in outputs if o.output_type == "display_data")
    assert conclusion.startswith("**Pick pydantic-ai ") and "The run covers everything the question asks." in conclusion


@pytest.mark.slow
def test_a_question_no_run_answers_is_one_line_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The audited invoice without its example: the notebook stops at the run's cell with the one
    line ``bench pick --type`` prints, naming the question's ``example=`` (MISFIT_EXAMPLE)."""
    for name, value in {
        "MISFIT_TYPE": "nbinvoice:Audited", "MISFIT_PROJECT": str(_invoice_project(tmp_path)),
        "MISFIT_SDKS": "pydantic-ai", "MISFIT_RESULTS": str(tmp_path / "results"), "JUPYTER_PLATFORM_DIRS": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute()  # fmt: skip
    errors = [
        o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"
    ]
    first = errors[0]
    assert first.ename == "QuestionError" and len(first.traceback) == 1, first.traceback
    (line,) = first.traceback
    assert "cannot generate an answer the output type accepts" in line and "--example FILE" in line
    assert "--example is example= (MISFIT_EXAMPLE)" in line and "Traceback" not in line
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_the_notebook_reads_the_published_dataset_by_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked for a dataset version (MISFIT_DATASET, MISFIT_DATASET_VERSION): the notebook reads
    that version's latest default run, runs nothing, and answers from it."""
    from bench import dataset

    built = dataset.build(tmp_path / "site" / "dataset")
    dataset.build(tmp_path / "site" / "dataset")  # the same cells again: the same version, listed once
    asked = {
        "MISFIT_DATASET": str(tmp_path / "site" / "dataset"),
        "MISFIT_DATASET_VERSION": built.version,
        "MISFIT_SDKS": "pydantic-ai,langchain",
        "MISFIT_PROTOCOLS": "openai-chat",
        "MISFIT_RESULTS": str(tmp_path / "results"),
    }
    outputs = _execute(asked, monkeypatch)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"read: dataset {built.version} from {tmp_path / 'site' / 'dataset'}" in text
    assert not (tmp_path / "results").exists()  # nothing was run
    conclusion = "".join(o["data"].get("text/markdown", "") for o in outputs if o.output_type == "display_data")
    assert conclusion.startswith("**Pick ") and ("pydantic-ai" in conclusion or "langchain" in conclusion)
