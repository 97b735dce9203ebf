"""Input errors a user meets (issue 13 point 6): one line on stderr, exit 2, naming what was
wrong and how to fix it: the suite a scenario belongs to, the closest name to a typo, every
problem in every scenario file, the path a run was looked for at."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app

runner = CliRunner()


def bench(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stderr


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_a_scenario_of_another_suite_says_which_suite(tmp_path: Path) -> None:
    code, stderr = bench("run", "--scenario", "http_500_persistent", "--out", str(tmp_path), "--no-progress")
    line = one_error_line(stderr)
    assert code == 2 and "suite 'full'" in line and "--suite full" in line


def test_typos_get_the_closest_name(tmp_path: Path) -> None:
    for option, typo, meant in [
        ("--scenario", "malformd_then_valid", "malformed_then_valid"),
        ("--mode", "tol", "tool"),
        ("--sdk", "langchan", "langchain"),
        ("--protocol", "openai-caht", "openai-chat"),
    ]:
        code, stderr = bench("run", option, typo, "--out", str(tmp_path), "--no-progress")
        assert code == 2 and f"did you mean {meant!r}?" in one_error_line(stderr), option


def test_validate_reports_every_problem_in_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "version: 1\nscenarios:\n"
        "  - {name: one, task: persn, script: [valid]}\n"
        "  - {name: two, task: person, script: [{malformed: trailing_comas}]}\n"
    )
    (tmp_path / "b.yaml").write_text("version: 1\nscenarios:\n  - {name: three, task: person, scrpt: [valid]}\n")
    (tmp_path / "c.yaml").write_text("version: 1\nscenarios: [\n")
    result = runner.invoke(app, ["scenarios", "validate", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith("error: ") for line in lines)
    for needle in ("a.yaml: entry 'one'", "a.yaml: entry 'two'", "b.yaml: entry 'three'", "c.yaml"):
        assert any(needle in line for line in lines), needle


def test_the_not_a_run_error_names_the_paths_it_looked_at(tmp_path: Path) -> None:
    code, stderr = bench("report", "no-such-run", "--out", str(tmp_path))
    line = one_error_line(stderr)
    assert code == 2 and str(Path("no-such-run").absolute() / "manifest.json") in line


def test_usage_errors_are_one_line_not_a_box() -> None:
    code, stderr = bench("run", "--reps", "0")
    line = one_error_line(stderr)
    assert code == 2 and "--reps" in line and "run --help" in line
    code, stderr = bench("scenarios", "validate")
    assert code == 2 and "Missing argument" in one_error_line(stderr)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the provider's failed bind
def test_a_busy_port_names_the_port() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, stderr = bench("serve", "--port", str(port))
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in one_error_line(stderr)


def test_an_install_hint_keeps_its_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning is printed through the run's rich console, whose markup would eat "[langchain]"."""
    from bench.sdk import registry

    real = registry.load

    def load(name: str) -> object:
        if name == "langchain":
            raise registry.AdapterUnavailable("needs the SDK: pip install 'misfit-bench[langchain]'")
        return real(name)

    monkeypatch.setattr(registry, "load", load)
    code, stderr = bench("run", "--mode", "telepathy", "--out", str(tmp_path), "--no-progress")
    assert code == 2 and "'misfit-bench[langchain]'" in stderr
