"""A clone stands alone: nothing in the repository reads or links a folder beside it.

Users clone this repository on its own; the developers' machines have a sibling folder of shared
material, and anything that reaches for it works there and fails everywhere else. The fixtures
the tests need are vendored under ``tests/fixtures`` instead.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.paths import REPO, WIRE_SAMPLES

# Built from pieces so that this file does not match its own pattern.
_SIBLING = "sh" + "ared"
SIBLING_REFERENCE = re.compile(
    rf"\.\./{_SIBLING}\b"  # a relative path to the sibling folder
    rf"|parent\s*/\s*[\"']{_SIBLING}[\"']"  # pathlib: the repo's parent joined with the folder name
    rf"|[\"']{_SIBLING}[\"']\s*/\s*[\"']wire-samples"  # the folder name joined with wire-samples
)


def tracked_files() -> list[Path]:
    """The files a clone has: git's list where there is a git checkout, else every file."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=30
        ).stdout.decode()
        return [REPO / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "results", "__pycache__"}
        return [p for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)]


def test_nothing_in_the_repo_reads_or_links_a_sibling_folder() -> None:
    offenders = []
    for path in tracked_files():
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(REPO):
                offenders.append(f"{path.relative_to(REPO)} -> {target} (a link out of the repo)")
            continue
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if SIBLING_REFERENCE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not offenders, "the repo reaches outside itself:\n" + "\n".join(offenders)


def test_the_pattern_catches_the_ways_a_sibling_is_reached() -> None:
    for line in (
        f"see ../{_SIBLING}/DESIGN.md",
        f'WIRE = REPO.parent / "{_SIBLING}" / "wire-samples"',
    ):
        assert SIBLING_REFERENCE.search(line), line
    assert not SIBLING_REFERENCE.search("the tool and output retries share a budget")


def test_the_wire_samples_are_vendored_with_their_provenance() -> None:
    assert WIRE_SAMPLES.is_relative_to(REPO)
    samples = sorted(p.name for p in WIRE_SAMPLES.iterdir() if p.name != "README.md")
    assert len(samples) >= 25
    provenance = (WIRE_SAMPLES / "README.md").read_text()
    undocumented = [name for name in samples if name not in provenance]
    assert not undocumented, f"samples without a provenance row: {undocumented}"
