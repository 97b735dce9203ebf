"""``bench bisect``: the first release between a good and a bad one where a scenario's cells
changed behaviour, found by halving the list of releases in between (about log2(n) + 2
environments: 7 for 100 releases).

A release's behaviour is, per supported cell of the scenario (after the mode, variant and
protocol filters), its outcome, model calls and exception type. Two releases behave alike when
every cell both can express behaves alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from bench.core.vocabulary import Outcome
from bench.report.changelog import Behaviour, behaviours, cell_name, with_release
from bench.results.store import read_table
from bench.run.plan import Filters

Signature = dict[tuple, Behaviour]


class BisectError(Exception):
    """Bad input (unknown releases, good == bad) or a release that could not be built."""


@dataclass
class BisectResult:
    sdk: str
    scenario: str
    first_bad: str | None
    """The first release that behaves like ``bad``; None when good and bad behave alike."""
    last_good: str | None
    tested: dict[str, Signature] = field(default_factory=dict)
    candidates: int = 0

    def differences(self) -> list[str]:
        """``cell: before -> after`` between the last good and the first bad release."""
        if self.first_bad is None or self.last_good is None:
            return []
        good, bad = self.tested[self.last_good], self.tested[self.first_bad]
        return [f"{cell_name(key)}: {good[key]} -> {bad[key]}" for key in sorted(set(good) & set(bad), key=str)
                if good[key] != bad[key]]  # fmt: skip


def candidates(versions: list[str], good: str, bad: str, supported: str = "") -> list[str]:
    """The releases from ``good`` to ``bad`` inclusive, oldest first (either order given)."""
    low, high = sorted((Version(good), Version(bad)))
    spec = SpecifierSet(supported) if supported else None
    chosen = [v for v in versions if low <= Version(v) <= high and (spec is None or Version(v) in spec)]
    return sorted(chosen, key=Version)


def alike(a: Signature, b: Signature) -> bool:
    return all(a[key] == b[key] for key in set(a) & set(b))


def search(versions: list[str], probe: Callable[[str], Signature]) -> tuple[int | None, dict[str, Signature]]:
    """Index of the first version that differs from ``versions[0]`` (probing as few as
    halving needs), or None when the last one does not differ."""
    tested: dict[str, Signature] = {}

    def signature(index: int) -> Signature:
        version = versions[index]
        if version not in tested:
            tested[version] = probe(version)
        return tested[version]

    good = signature(0)
    if alike(good, signature(len(versions) - 1)):
        return None, tested
    low, high = 0, len(versions) - 1
    while high - low > 1:
        middle = (low + high) // 2
        if alike(good, signature(middle)):
            low = middle
        else:
            high = middle
    return high, tested


def run_probe(
    sdk: str, scenario: str, filters: Filters, cache_dir: Path | None, results_root: Path,
    progress: Callable[[str], None],
) -> Callable[[str], Signature]:  # fmt: skip
    """A probe that runs the scenario's cells on one release and returns their signature. Every
    probe's run folder goes under ``results_root`` (``bench bisect``: one temporary directory
    for the whole bisect, removed at its end)."""
    from bench.run.suite import SuiteError, SuiteRequest, run_suite

    def probe(version: str) -> Signature:
        progress(f"testing {sdk}=={version}")
        request = SuiteRequest(
            filters=replace(filters, scenarios=frozenset({scenario})),
            releases=(f"{sdk}=={version}",),
            cache_dir=cache_dir,
            results_root=results_root,
        )
        try:
            directory = run_suite(request, warn=progress)
        except SuiteError as error:
            raise BisectError(str(error)) from None
        runs = with_release(read_table(directory, "runs").to_pandas())
        runs = runs[runs["outcome"] != Outcome.UNSUPPORTED]
        return {key[2:]: behaviour for key, behaviour in behaviours(runs).items()}

    return probe


def bisect(
    sdk: str, scenario: str, good: str, bad: str, versions: list[str], probe: Callable[[str], Signature],
    supported: str = "",
) -> BisectResult:  # fmt: skip
    """``supported``: the adapter's range (``Adapter.supported_releases``); only releases in it
    are probed, and ``good`` and ``bad`` must be in it."""
    if Version(good) == Version(bad):
        raise BisectError(f"--good and --bad are the same release ({good})")
    spec = SpecifierSet(supported) if supported else None
    for given in (good, bad):
        if given not in versions:
            raise BisectError(f"{sdk} has no release {given}")
        if spec is not None and Version(given) not in spec:
            raise BisectError(f"the {sdk} adapter does not support {given} (it supports {supported})")
    span = candidates(versions, good, bad, supported)
    if Version(good) > Version(bad):
        span.reverse()  # a change that was undone: search from the good side all the same
    index, tested = search(span, probe)
    first_bad = None if index is None else span[index]
    last_good = None if index is None else span[index - 1]
    return BisectResult(sdk, scenario, first_bad, last_good, tested, len(span))
