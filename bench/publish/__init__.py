"""``bench publish OUT``: what misfit-bench knows, as a static site and a dataset anyone can read
with nothing installed, from what the repository commits (the latest default run in
results/baseline, each SDK's release history in results/releases, the field run in
results/field).

The site (:mod:`bench.publish.pages`) is plain HTML: every table reads without JavaScript, and a
small script adds a filter box to each. It leads with the pick, then the latest matrix, a page per
SDK and per SDK release, a page per behaviour with every SDK and release side by side, the
changelog (each change linked to its behaviour's page), the field reports and the dataset
(:mod:`bench.dataset`, under ``OUT/dataset``). Nothing in it carries a request body, a prompt or
a path of the machine that built it: the pages are made from the runs table only.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from bench.dataset import Built, build
from bench.dataset.build import RESULTS_ROOT
from bench.dataset.scrub import scrub_text
from bench.pick import Weights
from bench.publish import pages
from bench.publish.html import ASSETS, STATIC, slug
from bench.report.changelog import with_release
from bench.results.store import ResultsError, load_run
from bench.upgrade.history import history_runs

__all__ = ["RESULTS_ROOT", "PublishError", "Published", "publish"]


class PublishError(Exception):
    """The committed runs cannot be published: one line naming the folder."""


@dataclass(frozen=True)
class Published:
    out: Path
    dataset: Built
    files: int
    bytes: int
    release_bytes: dict[tuple[str, str], int]
    """Bytes of each SDK release's page, by (sdk, release)."""


def publish(out: Path, weights: Weights, results_root: Path = RESULTS_ROOT) -> Published:
    """Write the site and the dataset under ``out`` (pages are rewritten; dataset versions kept)."""
    try:
        baseline = load_run(results_root / "baseline", results_root)
    except ResultsError as error:
        raise PublishError(f"no latest default run to publish: {error}") from None
    history = with_release(history_runs(results_root / "releases"))
    if history.empty:
        raise PublishError(f"{results_root / 'releases'}: no release history to publish")
    built = build(out / "dataset", results_root)
    out.mkdir(parents=True, exist_ok=True)
    for asset in ASSETS:
        shutil.copyfile(STATIC / asset, out / asset)
    sdks = sorted(set(baseline["runs"]["sdk"]) | set(history["sdk"]))
    changes = pages.changelog_html(results_root / "releases")
    written: dict[str, str] = {
        "index.html": pages.index_page(
            baseline["runs"], baseline["manifest"], weights, built, sdks, set(history["sdk"])
        ),
        "latest.html": pages.latest_page(baseline["runs"], sdks),
        "changelog.html": pages.page("Failure-handling changelog", changes[""].replace("{up}", "")),
        "behaviours.html": pages.behaviours_page(history),
        "field.html": pages.field_page(results_root / "field"),
        "dataset.html": pages.dataset_page(built),
    }
    for scenario in sorted(set(history["scenario"])):
        written[f"behaviour/{slug(scenario)}.html"] = pages.behaviour_page(history, scenario)
    release_bytes: dict[tuple[str, str], int] = {}
    for sdk, release in sorted(set(zip(history["sdk"], history["release"], strict=True))):
        text = pages.release_page(history, sdk, release)
        written[f"release/{slug(sdk)}/{slug(release)}.html"] = text
        release_bytes[(sdk, release)] = len(text.encode())
    for sdk in sorted(set(history["sdk"])):
        sizes = {release: size for (name, release), size in release_bytes.items() if name == sdk}
        changes_html = changes.get(sdk, "<p>One release only: no changes to tell.</p>").replace("{up}", "../")
        written[f"sdk/{slug(sdk)}.html"] = pages.sdk_page(history, sdk, changes_html, sizes)
    for name, text in written.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(scrub_text(text), encoding="utf-8")
    files = [path for path in out.rglob("*") if path.is_file()]
    return Published(out, built, len(files), sum(path.stat().st_size for path in files), release_bytes)
