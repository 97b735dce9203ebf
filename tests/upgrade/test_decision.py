"""``bench upgrade`` (issue 23.2): the decision for an agent's SDK upgrade, first screen first."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from own_project import HANDLER_LINE, bench, write_project
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run, read_table
from bench.upgrade.excepts import find_handlers

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--to", "pydantic-ai==2.0.0", "--from", "openai-agents==0.6.9"], "name two SDKs"),
        (["--to", "pydantic-ai@pinned"], "are the same release (pydantic-ai@pinned)"),
        (["--to", "pydantic-ai"], "--to and --from take SDK==VERSION"),
        (["--to", "pydantic-ai==x.y"], "'x.y' is not a version"),
    ],
)
def test_bad_sides_are_one_line(args: list[str], said: str) -> None:
    result = runner.invoke(app, ["upgrade", *args])
    assert result.exit_code == 2 and result.stdout == "", result.stderr
    assert result.stderr.count("\n") == 1 and said in result.stderr, result.stderr


def test_users_handlers_are_read_with_ast(tmp_path: Path) -> None:
    """Only clauses naming a class imported from a package count, however it is spelled; code
    under an environment or a results folder is not the user's."""
    write_project(tmp_path)
    (tmp_path / "refundsapp" / "more.py").write_text(
        textwrap.dedent(
            """
            import pydantic_ai.exceptions
            from pydantic_ai import exceptions as errors
            from pydantic_ai.exceptions import ModelHTTPError as HTTPError

            def a():
                try:
                    pass
                except (HTTPError, ValueError):
                    pass
                except errors.UnexpectedModelBehavior:
                    pass
                except pydantic_ai.exceptions.ModelRetry:
                    pass
                except KeyError:
                    pass
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x.py").write_text(
        "from pydantic_ai import ModelHTTPError\ntry:\n    pass\nexcept ModelHTTPError:\n    pass\n"
    )
    found = {h.where: h for h in find_handlers(tmp_path)}
    assert set(found) == {
        f"refundsapp/api.py:{HANDLER_LINE}", "refundsapp/api.py:11", "refundsapp/more.py:9",
        "refundsapp/more.py:11", "refundsapp/more.py:13",
    }  # fmt: skip
    assert found[f"refundsapp/api.py:{HANDLER_LINE}"].names("pydantic_ai.exceptions.ModelHTTPError")
    assert found["refundsapp/more.py:9"].names("pydantic_ai.exceptions.ModelHTTPError")
    assert found["refundsapp/more.py:9"].text == "(HTTPError, ValueError)"
    assert found["refundsapp/more.py:11"].names("pydantic_ai.exceptions.UnexpectedModelBehavior")
    assert not found["refundsapp/more.py:13"].names("pydantic_ai.exceptions.ModelHTTPError")


@pytest.mark.slow
def test_upgrade_judges_the_handler_on_the_class_actually_raised(tmp_path: Path) -> None:
    """Done (issues 23.2, 45.1): a Pydantic AI agent with an ``except ModelHTTPError`` handler,
    from 1.50.0 (its release environment) to the pinned 2.68.0: 2.68.0 raises a 400 as a private
    subclass of ModelHTTPError named ModelRequestRejectedError, which the handler still catches,
    decided on the lineage the run recorded (both sides' raised classes, the release worker's
    too); the handler is told once, file:line; exit 1 for the refusal that now raises. A JUnit
    file and a markdown summary a PR comment can hold."""
    project = write_project(tmp_path / "project")
    done = bench(
        project, "upgrade", "--agent", "refunds", "--from", "pydantic-ai==1.50.0", "--to", "pydantic-ai@pinned",
        "--junit", "upgrade.xml", "--markdown", "upgrade.md",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    first_screen = done.stdout.splitlines()[:25]
    assert first_screen[0].startswith("pydantic-ai 1.50.0 -> "), first_screen
    said = " ".join(done.stdout.split())
    handler = f"refundsapp/api.py:{HANDLER_LINE} except ModelHTTPError"
    assert any(line.strip().startswith(handler) for line in first_screen), "\n".join(first_screen)
    assert said.count(f"api.py:{HANDLER_LINE}") == 1, done.stdout  # once, not again without file:line
    assert "no longer catches" not in said and "except ModelHTTPError still catches" not in said, done.stdout
    assert "still catches ModelRequestRejectedError (raised as ModelRequestRejectedError(_CategorizedHTTPError," in said
    assert "a subclass of ModelHTTPError; checked on pydantic_ai 2.68.0): http_400_persistent (1 cell)" in said
    assert any("refusal_then_valid: recovered (2 calls) -> raises ContentFilterError" in line for line in first_screen)
    assert all(len(line) <= 120 for line in done.stdout.splitlines())
    runs = read_table(latest_run(project / "results"), "runs").to_pandas()
    raised = runs[runs["scenario"] == "http_400_persistent"].set_index("environment")["exception_mro"]
    assert list(raised["pydantic-ai==1.50.0"])[:1] == ["pydantic_ai.exceptions.ModelHTTPError"]  # from the worker
    assert list(raised["pinned"])[:3] == [
        "pydantic_ai.exceptions.ModelRequestRejectedError", "pydantic_ai.exceptions._CategorizedHTTPError",
        "pydantic_ai.exceptions.ModelHTTPError",
    ]  # fmt: skip
    summary = (project / "upgrade.md").read_text(encoding="utf-8")
    assert handler in " ".join(summary.split())
    assert len(summary.encode()) < 60_000 and all(len(line) <= 120 for line in summary.splitlines())
    suite = ET.parse(project / "upgrade.xml").getroot().find("testsuite")
    assert suite is not None
    failed = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert failed == {"refusal_then_valid"}, failed
