"""bench.releases.prepare: which environments a ``--release`` list builds, and the one-line
refusals: a TypeScript SDK's release is never looked up on PyPI (a PyPI package of the same name
is another project), it runs at the release the Node lock holds."""

from __future__ import annotations

from pathlib import Path

from adapters.ai.adapter import AiAdapter
from bench.node import setup
from bench.releases.envs import EnvironmentStore
from bench.releases.prepare import prepare
from bench.releases.spec import parse


def test_a_typescript_sdk_release_is_refused_in_one_line_and_pinned_is_the_locked_one(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path)
    adapters = {"ai": AiAdapter()}
    envs, errors = prepare([parse("ai==6.0.0"), parse("ai@latest"), parse("ai@pinned")], adapters, store)
    assert len(errors) == 2 and all("\n" not in e and "built for Python SDKs only" in e for e in errors)
    assert errors[0].startswith("ai==6.0.0: ") and "--release ai@pinned" in errors[0]
    assert [(env.name, env.version, env.path) for env in envs] == [("pinned", setup.locked()["ai"], None)]
    assert not (tmp_path / "envs").exists()  # nothing was looked up or built
