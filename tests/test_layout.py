"""The test tree mirrors bench/ (tests/README.md): tests/<package>/test_<module>.py drives
bench/<package>/<module>.py, tests/adapters/<sdk>/ the adapter in adapters/<sdk>/.

pytest imports test files in its default "prepend" mode and tests/ has no __init__.py, so a test
module's name is its file's basename: two test files of one name anywhere under tests/ cannot both
be collected. And since tests/ itself is put on sys.path, tests/adapters/ must never be what
``import adapters`` finds: the tests would then drive nothing."""

from __future__ import annotations

import importlib
from collections import Counter

from tests.paths import REPO, TESTS

SHARED = {"adapters", "benchmarks", "docs", "fixtures", "golden", "plugin"}
"""Folders of tests/ that are not a bench package: per-SDK tests, the benchmarks and docs run as
tests, vendored data, the plugin."""


def test_every_test_file_has_a_name_of_its_own() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]


def test_each_package_folder_mirrors_a_module_of_bench() -> None:
    strays = []
    for path in sorted(TESTS.glob("*/test_*.py")):
        package = path.parent.name
        if package in SHARED:
            continue
        # test_<module>.py, or test_<module>_<aspect>.py for one aspect of a module kept apart
        name = path.stem.removeprefix("test_")
        folder = REPO / "bench" / package
        modules = {m.stem for m in folder.glob("*.py")} | {d.parent.name for d in folder.glob("*/__init__.py")}
        if not any(name == m or name.startswith(f"{m}_") for m in modules):
            strays.append(f"{path.relative_to(REPO)} (no bench/{package}/<module>.py or <module>/ it is named after)")
    assert not strays, "test files that mirror no module:\n" + "\n".join(strays)


def test_each_adapter_folder_tests_a_real_adapter() -> None:
    for folder in sorted(p for p in (TESTS / "adapters").iterdir() if p.is_dir()):
        assert (REPO / "adapters" / folder.name / "adapter.py").is_file(), folder.name
        assert all(p.name.startswith(f"test_{folder.name}_") for p in folder.glob("test_*.py")), folder.name


def test_adapters_is_the_package_not_the_tests_folder() -> None:
    adapters = importlib.import_module("adapters")
    assert adapters.__file__ == str(REPO / "adapters" / "__init__.py")
    adapter = importlib.import_module("adapters.pydantic_ai.adapter")
    assert adapter.__file__ == str(REPO / "adapters" / "pydantic_ai" / "adapter.py")
