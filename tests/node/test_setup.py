"""bench.node.setup and ``python -m bench.node install``: what the README's first command and
.ci/run do for the Node side, without downloading anything (tests send no traffic off loopback:
``npm ci`` itself is never run here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.node import setup
from bench.node.__main__ import main


def test_install_when_the_lock_is_installed_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    if setup.missing_packages():
        pytest.skip("node/node_modules is not installed here")
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail(f"looked for {name}"))
    assert "matches package-lock.json" in setup.install()


def test_install_without_node_says_so_and_exits_0_so_the_python_matrix_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "package-lock.json").write_text((setup.NODE_ROOT / "package-lock.json").read_text())
    monkeypatch.setattr(setup, "NODE_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["install"]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("misfit-bench: Node and npm are not installed") and "\n" not in err


def test_a_failing_npm_ci_exits_3_with_its_last_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "package-lock.json").write_text((setup.NODE_ROOT / "package-lock.json").read_text())
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, body in (("npm", "echo 'npm error code EUSAGE' >&2; exit 1"), ("node", "echo v20.20.2")):
        (fake / name).write_text(f"#!/bin/sh\n{body}\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setattr(setup, "NODE_ROOT", tmp_path)
    with pytest.raises(setup.NodeSetupError, match=r"npm ci in .* failed: npm error code EUSAGE"):
        setup.install()
    assert main(["install"]) == 3


def test_the_module_refuses_anything_but_install() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.node", "instal"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == "usage: python -m bench.node install"


def test_an_old_node_is_named_after_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Debian bookworm's own nodejs is 18: the packages install, the cells cannot run, and it says so."""
    if setup.missing_packages():
        pytest.skip("node/node_modules is not installed here")
    (tmp_path / "node").write_text("#!/bin/sh\necho v18.19.0\n")
    (tmp_path / "node").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["install"]) == 0
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"misfit-bench: the TypeScript cells will be unsupported: Node 20.6+ is needed; {tmp_path}/node is 18.19.0"
    )


def test_under_ci_the_node_side_is_there_so_no_typescript_test_is_skipped_unseen() -> None:
    """.ci/run installs Node and the locked packages; where it could not, the TypeScript tests
    (skipped elsewhere without them) fail here instead of passing unseen."""
    import os

    if not os.environ.get("CI"):
        pytest.skip("outside CI a missing Node side skips the TypeScript tests, each with the reason")
    assert setup.unavailable() is None, setup.unavailable()


def test_an_install_interrupted_midway_is_never_trusted(tmp_path: Path) -> None:
    """``npm ci`` fills node_modules in place: packages there without the finished-install marker
    (a kill mid-install, or another lock's) leave the TypeScript cells unsupported, with why."""
    if setup.unavailable() is not None:
        pytest.skip("the Node side is not installed here")
    shutil.copytree(setup.NODE_ROOT, tmp_path / "node", symlinks=True)
    root = tmp_path / "node"
    assert setup.unavailable(root) is None
    (root / "node_modules" / setup.INSTALLED_MARKER).unlink()  # every package.json left, the install unfinished
    reason = setup.unavailable(root)
    assert reason is not None and "not a finished install" in reason
    (root / "node_modules" / setup.INSTALLED_MARKER).write_text("another lock\n")
    assert setup.unavailable(root) is not None
