"""``bench publish`` on a fresh clone (issue 43, "done means"): a real ``git clone`` of this
repository, no sibling folder and nothing but what is committed, builds the site and the dataset
from the committed runs; the code run is the clone's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.paths import REPO


@pytest.mark.slow  # a clone and a whole site: about 45 s
def test_publish_on_a_fresh_clone_builds_the_site_and_dataset_from_what_is_committed(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.fail("this test needs git and a repository to clone: run it from a checkout")
    clone = tmp_path / "alone" / "misfit-bench"  # a folder of its own: no sibling beside it
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    assert [path.name for path in clone.parent.iterdir()] == ["misfit-bench"]
    env = {**os.environ, "PYTHONPATH": str(clone)}
    code = "import sys, bench; from bench.cli import app; print(bench.__file__, file=sys.stderr); app()"
    done = subprocess.run(
        [sys.executable, "-c", code, "publish", str(tmp_path / "public")],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.splitlines()[0] == str(clone / "bench" / "__init__.py")  # the clone's code, not this tree's
    assert done.stdout.startswith("dataset cells-") and "index.html" in done.stdout, done.stdout
    (listed,) = (tmp_path / "public" / "dataset").glob("*/dataset.json")
    committed = sum(
        pq.read_metadata(path).num_rows
        for part in ("baseline", "releases")
        for path in (clone / "results" / part).rglob("runs.parquet")
    )
    assert json.loads(listed.read_text())["rows"] == committed > 0
    assert (tmp_path / "public" / "index.html").is_file() and (tmp_path / "public" / "field.html").is_file()
