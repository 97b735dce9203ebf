"""``bench view``: the documents of :mod:`bench.view.data` behind one URL scheme, served live by
a Starlette app on loopback or written once as static files (``--export DIR``, a CI artefact).

Served live, every document is JSON the page fetches (``data/<path>.json``) and every request
passes :mod:`bench.view.guard` (its own Host, no other site's request, the token of this start):
the documents hold every prompt the SDKs sent, so no other page may read them. Exported, the
documents are scripts the page loads through a ``<script>`` tag, because a browser refuses
``fetch`` of a folder opened as ``file://``; the export is the user's to publish, and its
``index.html`` says ``data-source="script"``. A small document is ``benchData("<path>", {...})``;
a large one, and the cells (``PACK_CELLS`` to a file, ``data/run/<id>/cells/<k>.js``), are
``benchPack("<file>", "<base64 of gzipped JSON {path: document}>")``, which the page inflates
with the browser's ``DecompressionStream``: a file per cell made a CI artefact of thousands of
files (7,552 and 46 MB for a two-SDK merge), the bodies in them repeat from cell to cell, and
gzip takes most of that away.

    data/runs.json                      the runs
    data/run/<id>/matrix.json           one run's matrix
    data/run/<id>/cell/<i>.json         one cell's reps and attempts
    data/run/<id>/changelog.json        the run's release x scenario grids and release steps
    data/compare/<a>/<b>.json           the cells that changed from run a to run b
    (``.js`` in an export; cells in packs, above)
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.view import data
from bench.view.guard import guard

if TYPE_CHECKING:
    from bench.pick import Weights

STATIC = Path(__file__).resolve().parent / "static"
PAGES = ("index.html", "app.js", "app.css")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ViewError(Exception):
    """A run that cannot be shown, or a bad option: one line, exit 2."""


class Site:
    """The runs on show, by id, and the document at each data path."""

    def __init__(
        self, directories: list[Path], unreadable: dict[str, str] | None = None, weights: Weights | None = None
    ) -> None:
        if not directories:
            raise ViewError("no runs to show (run `bench run` first, or name a run folder)")
        self.unreadable = dict(unreadable or {})
        """Runs found but not shown, by id, with their status (``unreadable: ...``): listed on the runs page."""
        self.runs: dict[str, data.Run] = {}
        for directory in directories:
            run = data.Run(directory)
            if run.id in self.runs:
                raise ViewError(f"two runs named {run.id!r}: {self.runs[run.id].directory} and {directory}")
            self.runs[run.id] = run
        self._matrices: dict[str, dict[str, Any]] = {}
        self.weights = weights
        """The pick's weights (``[tool.bench.pick]``, as ``bench pick`` reads them); None: the defaults."""

    def document(self, path: str) -> dict[str, Any] | None:
        """The document at ``path`` (without ``data/`` and ``.js``), or None when there is none.
        A run's matrix is computed once (seconds for a default run); cells are cheap."""
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "run" and parts[2] == "matrix" and parts[1] in self.runs:
            if parts[1] not in self._matrices:
                self._matrices[parts[1]] = data.matrix(self.runs[parts[1]], self.weights)
            return self._matrices[parts[1]]
        return self._document(parts)

    def _document(self, parts: list[str]) -> dict[str, Any] | None:
        if parts == ["runs"]:
            runs = sorted((run.summary() for run in self.runs.values()), key=lambda r: r["started_at"] or "")
            skipped = [{"id": run_id, "status": status} for run_id, status in sorted(self.unreadable.items())]
            return {"runs": runs[::-1], "unreadable": skipped, "colours": data.COLOURS}
        if len(parts) == 4 and parts[0] == "run" and parts[2] == "cell" and parts[1] in self.runs:
            run = self.runs[parts[1]]
            if CELL.match(parts[3]) and int(parts[3]) < len(run.groups):
                return data.cell(run, int(parts[3]))
            return None
        if len(parts) == 3 and parts[0] == "run" and parts[2] == "changelog" and parts[1] in self.runs:
            return data.release_changelog(self.runs[parts[1]])
        if len(parts) == 3 and parts[0] == "compare" and parts[1] in self.runs and parts[2] in self.runs:
            return data.compare(self.runs[parts[1]], self.runs[parts[2]])
        return None

    def paths(self) -> Iterator[str]:
        """Every document path: each run's matrix, cells and (for a run of several releases)
        changelog, and the comparisons of the runs (every ordered pair up to six runs, else each
        run with the one before it)."""
        yield "runs"
        ids = list(self.runs)
        for run_id, run in self.runs.items():
            yield f"run/{run_id}/matrix"
            if self.document(f"run/{run_id}/matrix").get("changelog"):  # type: ignore[union-attr]
                yield f"run/{run_id}/changelog"
            yield from (f"run/{run_id}/cell/{i}" for i in range(len(run.groups)))
        pairs = [(a, b) for a in ids for b in ids if a != b] if len(ids) <= 6 else list(zip(ids[1:], ids, strict=False))
        yield from (f"compare/{a}/{b}" for a, b in pairs)


def script(path: str, document: Any) -> str:
    """A document as the script an exported page loads (``</`` escaped: it never ends a script early)."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f"benchData({json.dumps(path)},{text});\n"


def pack(file: str, documents: dict[str, Any]) -> str:
    """Documents as one compressed script: ``benchPack(file, base64)``, the base64 of the gzipped
    JSON object of the documents by path (base64 has no ``<``: it never ends a script early)."""
    raw = json.dumps(documents, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    blob = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
    return f"benchPack({json.dumps(file)},{json.dumps(blob)});\n"


PACK_CELLS = 200
"""Cells to one exported file: a cell opens after its pack's download and inflation (about a
hundred kilobytes for a default run's cells), and a default run's 5,289 cells are 27 files."""
PLAIN_UNDER = 16_000
"""Characters under which a document stays a plain ``benchData`` script (the runs list, a small
matrix): readable as it is, and compression would save little."""
CELL_PATH = re.compile(r"^run/([^/]+)/cell/(\d+)$")


def file_of(path: str) -> str:
    """The exported file (under ``data/``, without ``.js``) holding the document at ``path``:
    app.js's ``fileOf``, which reads ``PACK_CELLS`` from index.html's ``data-pack-cells``."""
    found = CELL_PATH.match(path)
    return f"run/{found.group(1)}/cells/{int(found.group(2)) // PACK_CELLS}" if found else path


SAFE = re.compile(r"^[A-Za-z0-9._-]+$")
CELL = re.compile(r"^(0|[1-9][0-9]{0,8})$")
"""A cell number as the pages write it: ASCII digits (``str.isdigit`` takes ``²``, which ``int``
refuses), no leading zero (one path per cell), short enough for ``int``."""
SCRIPT_SOURCE = ('data-source="json"', 'data-source="script"')
"""What the export changes in ``index.html``: the pages load its documents as scripts (and it adds
``data-pack-cells``: how many cells a pack holds)."""


def export(site: Site, out: Path) -> int:
    """Write the pages and every document under ``out``; returns the number of files written.
    Cells go into packs of ``PACK_CELLS``, written as each fills (one pack in memory at a time)."""
    for run_id in site.runs:
        if not SAFE.match(run_id):
            raise ViewError(f"run folder name {run_id!r} cannot be a file name in the export")
    out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        shutil.copyfile(STATIC / page, out / page)
    index = (STATIC / "index.html").read_text(encoding="utf-8")
    source = f'{SCRIPT_SOURCE[1]} data-pack-cells="{PACK_CELLS}"'
    (out / "index.html").write_text(index.replace(SCRIPT_SOURCE[0], source), encoding="utf-8")
    count = len(PAGES)
    pack_file, packed = "", dict[str, Any]()
    for path in site.paths():
        file, document = file_of(path), site.document(path)
        if packed and file != pack_file:
            count += _write(out, pack_file, pack(pack_file, packed))
            packed = {}
        if file != path:
            pack_file, packed[path] = file, document
            continue
        text = script(path, document)
        count += _write(out, file, text if len(text) < PLAIN_UNDER else pack(file, {path: document}))
    if packed:
        count += _write(out, pack_file, pack(pack_file, packed))
    return count


def _write(out: Path, file: str, text: str) -> int:
    target = out / "data" / f"{file}.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return 1


def app(site: Site, token: str) -> Any:
    """The live app: the pages from the package, the documents computed on request as JSON, all
    behind :func:`bench.view.guard.guard` with this start's ``token``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import FileResponse, PlainTextResponse, Response
    from starlette.routing import Route

    async def page(request: Request) -> Response:
        name = request.path_params.get("name") or "index.html"
        if name not in PAGES:
            return PlainTextResponse(f"bench view has no page {name!r}\n", status_code=404)
        return FileResponse(STATIC / name, headers={"cache-control": "no-store"})

    async def document(request: Request) -> Response:
        path = request.path_params["path"]
        found = site.document(path.removesuffix(".json")) if path.endswith(".json") else None
        if found is None:
            return PlainTextResponse(f"bench view has no document data/{path}\n", status_code=404)
        text = json.dumps(found, ensure_ascii=False, separators=(",", ":"))
        return Response(text, media_type="application/json")

    routes = [Route("/", page), Route("/data/{path:path}", document), Route("/{name}", page)]
    return guard(Starlette(routes=routes), token)


def url(host: str, port: int, token: str) -> str:
    """The address ``bench view`` prints: the only way in (the token is new at every start)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/?token={token}"


def serve(site: Site, token: str, host: str = "127.0.0.1", port: int = 8765, started: Any = None) -> None:
    """Serve until Ctrl-C, on loopback only (the pages show every prompt the SDKs sent); call
    ``started(server)`` once it listens, so the URL printed then opens at once."""
    import uvicorn

    if host not in LOOPBACK:
        raise ViewError(f"--host {host}: bench view binds to loopback only (127.0.0.1)")
    config = uvicorn.Config(app(site, token), host=host, port=port, log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets)
        if started is not None and server.started:
            started(server)

    server.startup = startup  # type: ignore[method-assign]
    server.run()
