"""What a run set out to run, read back from its manifest, and whether it got there.

The gate compares a run with a baseline only on the cells the run planned (its SDKs, filters,
scenarios and shard), so a narrow run is not reported as hundreds of "absent" cells, and an
interrupted or partial run is called that instead of passing on what it happened to finish.
``bench baseline update`` uses the same two questions before it replaces a baseline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bench.results.labels import adapter_name
from bench.run.plan import shard_of

Key = tuple[Any, ...]
"""A gated cell: (agent, sdk, mode, variant, protocol, stream, scenario); agent "" for a built-in SDK."""


def _object(value: object) -> dict[str, Any]:
    """A manifest's sub-object, or empty when a hand-edited manifest has something else there."""
    return value if isinstance(value, dict) else {}


def _names(value: object) -> frozenset[str] | None:
    return frozenset(str(v) for v in value) if isinstance(value, list | tuple) and value else None


@dataclass(frozen=True)
class RunPlan:
    """``None`` for a dimension means "not restricted" (or not recorded, in an older manifest)."""

    sdks: frozenset[str] | None = None
    modes: frozenset[str] | None = None
    variants: frozenset[str] | None = None
    protocols: frozenset[str] | None = None
    scenarios: frozenset[str] | None = None
    """The scenarios left after the suite, scenario and fault filters (the manifest's list)."""
    shard: tuple[int, int] | None = None
    reps: int = 1
    seed: int = 0
    filtered: tuple[str, ...] = ()
    """The filters that narrowed the run, as the options that set them (``--mode tool``); empty: none."""

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> RunPlan:
        request, filters = _object(manifest.get("request")), _object(manifest.get("filters"))
        # Adapter names (an own agent's name, else the SDK's), as sdk_versions is keyed.
        sdks = _names(list(manifest.get("sdk_versions") or {})) or _names(request.get("sdks"))
        shard = manifest.get("shard")
        return cls(
            sdks=sdks,
            modes=_names(filters.get("modes")),
            variants=_names(filters.get("variants")),
            protocols=_names(filters.get("protocols")),
            scenarios=_names(manifest.get("scenarios")),
            shard=(int(shard[0]), int(shard[1])) if isinstance(shard, list) and len(shard) == 2 else None,
            reps=int(manifest.get("reps") or 1),
            seed=int(manifest.get("seed") or 0),
            filtered=tuple(
                f"--{name[:-1]} {','.join(sorted(map(str, values)))}"
                for name, values in filters.items()
                if isinstance(values, list) and values
            ),
        )

    def covers(self, key: Key, cell_ids: Iterable[str] = ()) -> bool:
        """Whether the run planned this cell. For a shard, ``cell_ids`` are the ids the cell's rows
        have in another run of the same seed (the baseline): ids depend on the parameters only,
        so the shard's hash rule says which of them this shard ran."""
        agent, sdk, mode, variant, protocol, _stream, scenario = key
        for allowed, value in (
            (self.sdks, adapter_name(agent, sdk)),
            (self.modes, mode),
            (self.variants, variant),
            (self.protocols, protocol),
            (self.scenarios, scenario),
        ):
            if allowed is not None and str(value) not in allowed:
                return False
        if self.shard is None:
            return True
        index, total = self.shard
        return any(shard_of(cid, total) == index for cid in cell_ids)


def partial_reason(manifest: dict[str, Any], cells_written: int) -> str | None:
    """Why a run is not the whole of what it planned, in words (None: it is complete)."""
    status = manifest.get("status")
    planned = manifest.get("cells_planned")
    of = f"{cells_written} of {planned} planned cells written" if planned else f"{cells_written} cells written"
    if status in ("running", "interrupted"):
        return f"the run is {status}: {of}"
    if manifest.get("shards_complete") is False:
        return f"a merge of shards that do not cover 1..N: {of}"
    if status not in (None, "complete"):
        return f"the run's status is {status!r}: {of}"
    if isinstance(planned, int) and cells_written < planned:
        return f"the run is partial: {of}"
    return None
