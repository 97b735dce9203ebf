"""``bench view``: the documents of :mod:`bench.view.data` behind one URL scheme, served live by
a Starlette app on loopback or written once as static files (``--export DIR``, a CI artefact).

Every document is a small script, ``benchData("<path>", {...})``, loaded by the page through a
``<script>`` tag: that works from ``http://127.0.0.1`` and from a folder opened as ``file://``
alike (a browser refuses ``fetch`` of local files), so the export needs no server.

    data/runs.js                      the runs
    data/run/<id>/matrix.js           one run's matrix
    data/run/<id>/cell/<i>.js         one cell's reps and attempts
    data/compare/<a>/<b>.js           the cells that changed from run a to run b
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.view import data

STATIC = Path(__file__).resolve().parent / "static"
PAGES = ("index.html", "app.js", "app.css")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ViewError(Exception):
    """A run that cannot be shown, or a bad option: one line, exit 2."""


class Site:
    """The runs on show, by id, and the document at each data path."""

    def __init__(self, directories: list[Path], unreadable: dict[str, str] | None = None) -> None:
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

    def document(self, path: str) -> dict[str, Any] | None:
        """The document at ``path`` (without ``data/`` and ``.js``), or None when there is none.
        A run's matrix is computed once (seconds for a default run); cells are cheap."""
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "run" and parts[2] == "matrix" and parts[1] in self.runs:
            if parts[1] not in self._matrices:
                self._matrices[parts[1]] = data.matrix(self.runs[parts[1]])
            return self._matrices[parts[1]]
        return self._document(parts)

    def _document(self, parts: list[str]) -> dict[str, Any] | None:
        if parts == ["runs"]:
            runs = sorted((run.summary() for run in self.runs.values()), key=lambda r: r["started_at"] or "")
            skipped = [{"id": run_id, "status": status} for run_id, status in sorted(self.unreadable.items())]
            return {"runs": runs[::-1], "unreadable": skipped, "colours": data.COLOURS}
        if len(parts) == 4 and parts[0] == "run" and parts[2] == "cell" and parts[1] in self.runs:
            run = self.runs[parts[1]]
            if parts[3].isdigit() and int(parts[3]) < len(run.groups):
                return data.cell(run, int(parts[3]))
            return None
        if len(parts) == 3 and parts[0] == "compare" and parts[1] in self.runs and parts[2] in self.runs:
            return data.compare(self.runs[parts[1]], self.runs[parts[2]])
        return None

    def paths(self) -> Iterator[str]:
        """Every document path: each run's matrix and cells, and the comparisons of the runs (every
        ordered pair up to six runs, else each run with the one before it)."""
        yield "runs"
        ids = list(self.runs)
        for run_id, run in self.runs.items():
            yield f"run/{run_id}/matrix"
            yield from (f"run/{run_id}/cell/{i}" for i in range(len(run.groups)))
        pairs = [(a, b) for a in ids for b in ids if a != b] if len(ids) <= 6 else list(zip(ids[1:], ids, strict=False))
        yield from (f"compare/{a}/{b}" for a, b in pairs)


def script(path: str, document: Any) -> str:
    """A document as the script the page loads (``</`` escaped: it never ends a script early)."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f"benchData({json.dumps(path)},{text});\n"


SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


def export(site: Site, out: Path) -> int:
    """Write the pages and every document under ``out``; returns the number of files written."""
    for run_id in site.runs:
        if not SAFE.match(run_id):
            raise ViewError(f"run folder name {run_id!r} cannot be a file name in the export")
    out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        shutil.copyfile(STATIC / page, out / page)
    count = len(PAGES)
    for path in site.paths():
        target = out / "data" / f"{path}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(script(path, site.document(path)), encoding="utf-8")
        count += 1
    return count


def app(site: Site) -> Any:
    """The live app: the pages from the package, the documents computed on request."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import FileResponse, Response
    from starlette.routing import Route

    async def page(request: Request) -> Response:
        name = request.path_params.get("name") or "index.html"
        if name not in PAGES:
            return Response("not found", status_code=404)
        return FileResponse(STATIC / name, headers={"cache-control": "no-store"})

    async def document(request: Request) -> Response:
        path = request.path_params["path"].removesuffix(".js")
        found = site.document(path)
        if found is None:
            return Response(f"// no document {path}\n", status_code=404, media_type="text/javascript")
        return Response(script(path, found), media_type="text/javascript; charset=utf-8")

    return Starlette(
        routes=[Route("/", page), Route("/data/{path:path}", document), Route("/{name}", page)],
    )


def serve(site: Site, host: str = "127.0.0.1", port: int = 8765, started: Any = None) -> None:
    """Serve until Ctrl-C, on loopback only (the pages show every prompt the SDKs sent)."""
    import uvicorn

    if host not in LOOPBACK:
        raise ViewError(f"--host {host}: bench view binds to loopback only (127.0.0.1)")
    config = uvicorn.Config(app(site), host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    if started is not None:
        started(server)
    server.run()
