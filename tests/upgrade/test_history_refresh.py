"""The scheduled refresh, step by step without the network: the releases a fake package index
(and a fake npm registry) holds beyond the committed history, the refresh's run put into the
history, and the workflow file that chains them checked against the GitHub workflow schema."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.releases.newer import Status, measured
from bench.results.store import read_manifest, read_table, write_manifest
from bench.upgrade.history import HISTORY, HistoryError, add
from tests.paths import REPO

WORKFLOW = REPO / ".github" / "workflows" / "refresh-history.yml"
SITE_WORKFLOW = WORKFLOW.with_name("publish-site.yml")


def _file(name: str, version: str, *, yanked: bool = False, uploaded: str = "2026-11-30T10:00:00Z") -> dict[str, Any]:
    return {"filename": f"{name}-{version}-py3-none-any.whl", "upload-time": uploaded, "yanked": yanked, "hashes": {}}


PAGES = {
    # the history holds agentmaker 0.1.0 and 0.2.0 (pinned); the fake index adds two finals, a
    # pre-release and a yanked one, and repeats the old ones
    "/simple/agentmaker/": {
        "files": [
            _file("agentmaker", "0.1.0"),
            _file("agentmaker", "0.2.0"),
            _file("agentmaker", "0.2.1"),
            _file("agentmaker", "0.3.0rc1"),
            _file("agentmaker", "0.2.2", yanked=True),
            _file("agentmaker", "0.3.0", uploaded="2026-12-01T09:00:00Z"),
        ]
    },
}


@contextlib.contextmanager
def _serving(pages: dict[str, Any], content_type: str) -> Iterator[str]:
    """A registry on loopback answering each path of ``pages`` with its JSON (404 otherwise)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = pages.get(self.path)
            body = json.dumps(page).encode() if page is not None else b"{}"
            self.send_response(200 if page is not None else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fake_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    with _serving(PAGES, "application/vnd.pypi.simple.v1+json") as url:
        monkeypatch.setenv("UV_DEFAULT_INDEX", f"{url}/simple")
        monkeypatch.setenv("MISFIT_BENCH_CACHE", str(tmp_path / "cache"))
        yield url


def test_new_lists_exactly_the_releases_beyond_the_history(fake_index: str) -> None:
    assert sorted(measured(HISTORY, "agentmaker")) == ["0.1.0", "0.2.0"]
    result = CliRunner().invoke(app, ["releases", "list", "--new", "--sdk", "agentmaker", "--json"])
    assert result.exit_code == 0, result.output
    listed = {(entry["version"], entry["status"]) for entry in json.loads(result.stdout)}
    assert listed == {
        ("0.2.1", Status.NEW),
        ("0.2.2", Status.YANKED),
        ("0.3.0rc1", Status.PRE_RELEASE),
        ("0.3.0", Status.NEW),
    }
    text = CliRunner().invoke(app, ["releases", "list", "--new", "--sdk", "agentmaker"]).stdout
    assert "agentmaker==0.3.0" in text and "pre-release" in text and "yanked" in text
    short = CliRunner().invoke(app, ["releases", "--new", "--sdk", "agentmaker", "--json"])  # the spelling
    assert short.exit_code == 0 and json.loads(short.stdout) == json.loads(result.stdout), short.output


@pytest.mark.parametrize("index", ["unreachable", "not-an-index"])
def test_an_index_that_cannot_be_read_is_one_line_and_exit_2(
    index: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with _serving({"/simple/agentmaker/": "<html>a proxy's login page</html>"}, "application/json") as url:
        where = "http://127.0.0.1:9" if index == "unreachable" else url  # nothing listens on port 9
        monkeypatch.setenv("UV_DEFAULT_INDEX", f"{where}/simple")
        monkeypatch.setenv("MISFIT_BENCH_CACHE", str(tmp_path / "cache"))
        result = CliRunner().invoke(app, ["releases", "list", "--new", "--sdk", "agentmaker"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


@pytest.fixture
def fake_npm(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An npm registry on loopback holding the ai package: older releases, the locked one, and
    beyond it a final, a pre-release and a deprecated one."""
    from bench.node import setup

    locked = setup.locked()["ai"]
    major, minor, patch = map(int, locked.split("."))
    beyond = {f"{major}.{minor}.{patch + 1}": {}, f"{major}.{minor + 1}.0-beta.1": {}}
    beyond[f"{major}.{minor}.{patch + 2}"] = {"deprecated": "broken build"}
    versions = {"1.0.0": {}, locked: {}, **beyond}
    document = {"name": "ai", "versions": versions, "time": {v: "2026-12-01T00:00:00Z" for v in versions}}

    with _serving({"/ai": document}, "application/json") as url:
        monkeypatch.setenv("npm_config_registry", url)
        yield locked


def test_new_lists_a_typescript_sdks_npm_releases_above_its_committed_lock(fake_npm: str) -> None:
    result = CliRunner().invoke(app, ["releases", "--new", "--sdk", "ai", "--json"])
    assert result.exit_code == 0, result.output
    listed = [(entry["version"], entry["status"]) for entry in json.loads(result.stdout)]
    major, minor, patch = map(int, fake_npm.split("."))
    assert listed == [
        (f"{major}.{minor}.{patch + 1}", Status.NEW),
        (f"{major}.{minor}.{patch + 2}", Status.YANKED),
        (f"{major}.{minor + 1}.0-beta.1", Status.PRE_RELEASE),
    ]


@pytest.mark.parametrize("registry", ["unreachable", "not-json"])
def test_an_npm_registry_that_cannot_be_read_is_one_line_and_exit_2(
    registry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _serving({"/ai": "<html>a proxy's login page</html>"}, "text/html") as url:
        monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9" if registry == "unreachable" else url)
        result = CliRunner().invoke(app, ["releases", "--new", "--sdk", "ai", "--json"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "/ai" in result.stderr  # names what it could not read


def _refresh_run(tmp_path: Path, version: str) -> Path:
    """What the refresh's `bench run --release agentmaker==VERSION` writes, made from the
    committed 0.1.0 cells (a run that measured the new release the same way)."""
    run = tmp_path / "run"
    shutil.copytree(HISTORY / "agentmaker", run)
    runs = read_table(run, "runs")
    old = "agentmaker==0.1.0"
    runs = runs.filter(pc.equal(runs["environment"], old))
    runs = runs.set_column(
        runs.schema.get_field_index("environment"), "environment", [[f"agentmaker=={version}"] * len(runs)]
    )
    import pyarrow.parquet as pq

    pq.write_table(runs, run / "runs.parquet")
    manifest = read_manifest(run)
    env = next(e for e in manifest["environments"] if e["name"] == old)
    manifest["environments"] = [env | {"name": f"agentmaker=={version}", "version": version}]
    manifest["environment_errors"] = ["agentmaker==0.2.2: yanked on the index; not built"]
    write_manifest(run, manifest)
    return run


def test_a_refresh_run_goes_into_the_history_and_again_replaces_itself(tmp_path: Path) -> None:
    root = tmp_path / "releases"
    shutil.copytree(HISTORY / "agentmaker", root / "agentmaker")
    before = len(read_table(root / "agentmaker", "runs"))
    run = _refresh_run(tmp_path, "0.3.0")
    added = len(read_table(run, "runs"))
    lines = add(run, root)
    assert lines == ["agentmaker==0.2.2: yanked on the index; not built", f"agentmaker==0.3.0: {added} cells added"]
    assert len(read_table(root / "agentmaker", "runs")) == before + added
    assert sorted(measured(root, "agentmaker")) == ["0.1.0", "0.2.0", "0.3.0"]
    add(run, root)  # the same release again: replaced, not doubled
    assert len(read_table(root / "agentmaker", "runs")) == before + added


def test_a_run_of_fewer_scenarios_than_the_history_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "releases"
    shutil.copytree(HISTORY / "agentmaker", root / "agentmaker")
    run = _refresh_run(tmp_path, "0.3.0")
    manifest = read_manifest(run)
    write_manifest(run, manifest | {"scenarios": manifest["scenarios"][:3]})
    with pytest.raises(HistoryError, match="run the default suite"):
        add(run, root)


def test_the_workflow_files_are_valid_github_workflows() -> None:
    """check-jsonschema's vendored GitHub workflow schema (offline: no schema is downloaded)."""
    example = (REPO / "docs" / "ci.md").read_text().split("# .github/workflows/misfit-bench.yml\n", 1)[1]
    example_file = WORKFLOW.with_name("misfit-bench.example.yml")
    checked = [WORKFLOW, SITE_WORKFLOW]
    try:
        example_file.write_text(example.split("\n```", 1)[0] + "\n")
        checked.append(example_file)
        command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]
        done = subprocess.run([*command, *map(str, checked)], capture_output=True, text=True, timeout=120)
    finally:
        example_file.unlink(missing_ok=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = WORKFLOW.read_text()
    for step in (
        "bench releases list --new",
        "bench run",
        "bench merge",
        "history add",
        "history write",
        "gh pr create",
    ):
        assert step in text, step
    site = SITE_WORKFLOW.read_text()
    for step in ("bench publish public", "actions/upload-pages-artifact", "actions/deploy-pages"):
        assert step in site, step
