"""A user's project outside this repository whose output type has common validators (issue 25,
point 1): for each of the five SDKs, the ``wrong`` cells run; an agent whose ``wrong`` truly
cannot be built (no check, no example: every valid answer is equally right) gets one line on
stderr, a count in the summary, an entry in the manifest, and a fixture rate that raises.

``bench`` and pytest run as separate processes from the project's folder, with this checkout's
misfit-bench first on ``PYTHONPATH`` (the shared venv's editable install may be another's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.own.derive import NO_MEANING
from bench.results.store import load_run

REPO = Path(__file__).resolve().parents[2]

AGENTS = """
from decimal import Decimal
from typing import Literal

from agentmaker import Agent as MakerAgent
from agents import Agent as OpenAIAgent
from claude_agent_sdk import ClaudeAgentOptions
from langchain.agents import create_agent
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_ai import Agent


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str = Field(pattern=r"^[A-Z]{3}-\\d{4}$")
    amount: float

    @field_validator("amount")
    @classmethod
    def two_decimals(cls, value):
        if round(value, 2) != value:
            raise ValueError("amounts have at most two decimals")
        return value


class Invoice(BaseModel):
    model_config = ConfigDict(extra="forbid")
    number: str = Field(pattern=r"^INV-\\d{6}$")
    currency: Literal["EUR", "USD", "GBP"]
    total: Decimal = Field(max_digits=10, decimal_places=2)
    lines: list[Line] = Field(min_length=2)

    @model_validator(mode="after")
    def total_is_the_sum(self):
        if sum(Decimal(str(line.amount)) for line in self.lines) != self.total:
            raise ValueError("total must be the sum of the lines")
        return self


def check(invoice):
    number = invoice["number"] if isinstance(invoice, dict) else invoice.number
    return None if number == "INV-000123" else f"number is {number}, expected INV-000123"


INSTRUCTIONS = "Read the invoice."
billing = Agent("openai-chat:gpt-4.1", output_type=Invoice, retries=1, instructions=INSTRUCTIONS)
plain = Agent("openai-chat:gpt-4.1", output_type=Invoice, retries=1, instructions=INSTRUCTIONS)
oa_billing = OpenAIAgent(name="billing", instructions=INSTRUCTIONS, output_type=Invoice)


def lc_billing(model):
    return create_agent(model.langchain(), tools=[], response_format=Invoice, system_prompt=INSTRUCTIONS)


def maker_billing(model):
    return MakerAgent("billing", model.agentmaker(), system_prompt=INSTRUCTIONS)


claude_billing = ClaudeAgentOptions(
    output_format={"type": "json_schema", "schema": Invoice.model_json_schema()},
    system_prompt=INSTRUCTIONS,
    tools=[],
)
"""

EXAMPLE = {
    "number": "INV-000123",
    "currency": "EUR",
    "total": "30.50",
    "lines": [{"sku": "ABC-0001", "amount": 10.25}, {"sku": "XYZ-0002", "amount": 20.25}],
}

CHECKED = "example = 'invoice.json'\ncheck = 'billing_app.agents:check'\n"
ENTRIES = {
    "billing": CHECKED,
    "oa-billing": CHECKED,
    "lc-billing": CHECKED,
    "claude-billing": CHECKED,
    "maker-billing": CHECKED + "output = 'billing_app.agents:Invoice'\n",
    "plain": "",
}
"""Five SDKs with the issue's declaration (example and check), and one agent with neither."""

PYPROJECT = '[project]\nname = "billing-app"\nversion = "0.1.0"\n' + "".join(
    f"\n[[tool.bench.agents]]\nname = '{name}'\nagent = 'billing_app.agents:{name.replace('-', '_')}'\n{fields}"
    for name, fields in ENTRIES.items()
)

USER_TESTS = """
def test_billing_hands_on_no_wrong_invoice(misfit):
    result = misfit.run("billing", scenarios=["valid", "wrong_*"])
    assert result.rate("wrong", "empty") == 0


def test_plain_hands_on_no_wrong_invoice(misfit):
    result = misfit.run("plain", scenarios=["valid", "wrong_*"])
    assert result.rate("wrong") == 0
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("billing-project")
    assert not root.resolve().is_relative_to(REPO)
    (root / "billing_app").mkdir()
    (root / "billing_app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "billing_app" / "agents.py").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (root / "invoice.json").write_text(json.dumps(EXAMPLE), encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_billing_faults.py").write_text(textwrap.dedent(USER_TESTS), encoding="utf-8")
    return root


def run(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env |= {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *command], cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False
    )


@pytest.mark.slow
def test_wrong_cells_run_for_every_sdk_and_what_cannot_run_is_said(project: Path) -> None:
    done = run(project, "-m", "bench.cli", "run", "--agent", "all", "--scenario", "valid", "--scenario", "wrong_*")
    assert done.returncode == 0, done.stderr
    loaded = load_run(project / "results" / "latest")
    runs = loaded["runs"]
    wrong = runs[runs["scenario"].str.startswith("wrong_")]
    ran = wrong[wrong["agent"] != "plain"]
    assert set(ran["sdk"]) == {"pydantic-ai", "openai-agents", "langchain", "claude-agent-sdk", "agentmaker"}
    assert len(ran) == 10 and (ran["outcome"] != "unsupported").all(), ran[["agent", "scenario", "outcome", "note"]]
    assert (ran["model_calls"] >= 1).all()
    assert not (runs["outcome"] == "harness_error").any(), runs[["agent", "scenario", "exception_message"]]
    assert all(loaded["manifest"]["agents"][name]["valid"] == EXAMPLE for name in ENTRIES if name != "plain")

    unmeasured = wrong[wrong["agent"] == "plain"]
    assert set(unmeasured["outcome"]) == {"unsupported"}
    assert set(unmeasured["note"]) == {f"not applicable: wrong {NO_MEANING}"}
    line = f"not measured: agent 'plain': wrong ({NO_MEANING}) x 2 cells"
    assert done.stderr.count("not measured:") == 1 and line in done.stderr, done.stderr
    assert done.stdout.count("not measured:") == 1 and line in done.stdout, done.stdout
    entry = {"agent": "plain", "family": "wrong", "reason": NO_MEANING, "cells": 2}
    assert loaded["manifest"]["not_measured"] == [entry]
    assert loaded["manifest"]["agents"]["plain"]["not_measured"]["wrong"] == NO_MEANING
    assert loaded["manifest"]["agents"]["billing"]["wrong"] is not None


@pytest.mark.slow
def test_a_plan_of_only_what_cannot_be_built_is_one_line(project: Path) -> None:
    done = run(project, "-m", "bench.cli", "run", "--agent", "plain", "--scenario", "wrong_*", "--out", "refused")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not measured: agent 'plain': wrong (needs a check" in done.stderr
    assert not (project / "refused").exists()


@pytest.mark.slow
def test_the_fixture_measures_wrong_or_raises_naming_why(project: Path) -> None:
    done = run(project, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests")
    assert "2 failed" in done.stdout, done.stdout
    # billing: its wrong cells ran, and pydantic-ai hands the wrong invoice on (no output validator)
    assert "assert 0.666667 == 0" in done.stdout, done.stdout
    assert f"NoCellRan: rate(wrong): wrong was not measured for agent 'plain': wrong {NO_MEANING}" in done.stdout, (
        done.stdout
    )
