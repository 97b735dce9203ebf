"""A cassette folder: what ``--cassettes DIR`` reads (the recorded JSON and imported VCR files)."""

from __future__ import annotations

from pathlib import Path

from bench.cassettes.format import Cassette, CassetteError, load_cassette
from bench.cassettes.vcr import PROVENANCE_FILE, is_vcr, load_vcr, origins


def load_cassettes(directory: Path) -> list[tuple[Path, Cassette]]:
    """Every cassette of ``directory`` in name order: each ``*.json`` cassette, and each
    interaction of a VCR.py file (``*.yaml``, ``*.yaml.gz``: :mod:`bench.cassettes.vcr`)."""
    if not directory.is_dir():
        raise CassetteError(f"{directory}: no such cassette folder")
    known = origins(directory)
    found: list[tuple[Path, Cassette]] = []
    for path in sorted(directory.iterdir()):
        if path.suffix == ".json" and path.name != PROVENANCE_FILE and not path.name.endswith("_schema.json"):
            found.append((path, load_cassette(path)))
        elif is_vcr(path):
            found += [(path, cassette) for cassette in load_vcr(path, known.get(path.name))]
    return found
