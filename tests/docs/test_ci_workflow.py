"""The GitHub workflow docs/ci.md gives (issue 30, point 4) is valid YAML and keeps its CI cost
down: every job caches pip keyed on constraints.txt, the gate job may write pull requests, and a
step posts reports/report.md as the PR comment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CI_DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def workflow() -> dict[str, Any]:
    found = re.search(r"```yaml\n(# \.github/workflows/misfit-bench\.yml\n.*?)```", CI_DOC.read_text(), re.S)
    assert found is not None, "docs/ci.md lost its example workflow"
    return yaml.safe_load(found.group(1))


def test_every_job_caches_pip_on_the_constraints() -> None:
    jobs = workflow()["jobs"]
    for name, job in jobs.items():
        setups = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python")]
        assert setups, name
        for step in setups:
            assert step["with"]["cache"] == "pip", name
            assert "constraints.txt" in step["with"]["cache-dependency-path"].split(), name


def test_the_gate_job_posts_the_report_as_a_pr_comment() -> None:
    gate = workflow()["jobs"]["gate"]
    assert gate["permissions"]["pull-requests"] == "write"
    (comment,) = [s for s in gate["steps"] if "gh pr comment" in s.get("run", "")]
    assert "--body-file reports/report.md" in comment["run"] and "GH_TOKEN" in comment["env"]
    assert "always()" in comment["if"] and comment["continue-on-error"] is True
    steps = [s.get("name", "") for s in gate["steps"]]
    assert steps.index(comment["name"]) > next(i for i, n in enumerate(steps) if n.startswith("PR summary"))
