"""A cassette folder: what ``--cassettes DIR`` reads (the recorded JSON and imported VCR files).

A folder is read within :data:`bench.cassettes.format.MAX_FOLDER_BYTES` in all (each file
within :data:`bench.cassettes.format.MAX_FILE_BYTES`), so its memory is bounded whatever it
holds. A file that cannot be read refuses the folder (one line naming it), unless the caller
asks to skip bad files (``--skip-bad``): then it is named to ``on_bad`` and left out. Passing
the folder's limit is never skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.cassettes.format import (
    MAX_FILE_BYTES,
    MAX_FOLDER_BYTES,
    Cassette,
    CassetteError,
    OverLimit,
    load_cassette,
    read_bounded,
)
from bench.cassettes.vcr import PROVENANCE_FILE, is_vcr, load_vcr, origins


def load_cassettes(
    directory: Path, on_bad: Callable[[CassetteError], None] | None = None
) -> list[tuple[Path, Cassette]]:
    """Every cassette of ``directory`` in name order: each ``*.json`` cassette, and each
    interaction of a VCR.py file (``*.yaml``, ``*.yaml.gz``: :mod:`bench.cassettes.vcr`).
    ``on_bad``: given, a file that cannot be read is passed to it and skipped (else raised)."""
    if not directory.is_dir():
        raise CassetteError(f"{directory}: no such cassette folder")
    known = origins(directory)
    found: list[tuple[Path, Cassette]] = []
    left = MAX_FOLDER_BYTES
    for path in sorted(directory.iterdir()):
        cassette = path.suffix == ".json" and path.name != PROVENANCE_FILE and not path.name.endswith("_schema.json")
        if not cassette and not is_vcr(path):
            continue
        limit, of_folder = (MAX_FILE_BYTES, False) if left >= MAX_FILE_BYTES else (left, True)
        try:
            data = read_bounded(path, limit, of_folder)
            left -= len(data)
            if cassette:
                found.append((path, load_cassette(path, data)))
            else:
                found += [(path, one) for one in load_vcr(path, known.get(path.name), data)]
        except CassetteError as error:
            if on_bad is None or (isinstance(error, OverLimit) and error.folder):
                raise
            on_bad(error)
    return found


def skip_quietly(error: CassetteError) -> None:
    """``on_bad`` for a caller whose user was told of the bad files already (``bench run`` names
    each before the run; its workers read the folder again)."""
