"""Results on disk: ``results/<suite_id>/`` with ``runs.parquet``, ``attempts.parquet`` and
``manifest.json``, plus ``results/latest``, a one-line file naming the newest run's folder.

``latest`` is a file, not a link to the folder: a glob over ``results/*/runs.parquet`` (DuckDB,
polars, pyarrow) then reads each run once, where a link read the newest run twice. Every
command that takes a run takes ``results/latest`` (:func:`resolve_run` follows it), and an
older results folder whose ``latest`` is still a link reads as before.

Cells are written as they finish, as append-only parts renamed into place atomically, so an
interrupted run leaves a readable run of everything finished so far; ``finalize`` merges the
parts into the two tables. Readers accept either form.

Every rewrite of a run's two tables (the final merge, ``--rerun`` taking cells out) is one step,
both tables or neither (:func:`replace_tables`), and a folder that is replaced whole (``bench
merge --force``, ``bench baseline update``) is staged and swapped in (:func:`replace_folder`):
no interrupt or kill leaves a cell's row without its attempts, or a good folder deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pydantic

from bench.core.vocabulary import Outcome
from bench.results import columns, details
from bench.results.manifest import MAX_BYTES as MANIFEST_MAX_BYTES
from bench.results.manifest import ManifestError, parse_manifest

RUNS_FILE = "runs.parquet"
ATTEMPTS_FILE = "attempts.parquet"
MANIFEST_FILE = "manifest.json"
PARTS_DIR = "parts"


class ResultsError(Exception):
    """A path that is not a run, or a run that cannot be read; the message says which."""


def new_suite_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()


def atomic_write_table(table: pa.Table, target: Path) -> None:
    """One parquet file, renamed into place whole (a reader never sees half of it)."""
    temporary = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, target)
    step_for_tests()


COMMIT_FILE = ".tables.commit"
"""Present while :func:`replace_tables` installs a run's new tables: the tables it names are the
staged ``.<table>.parquet.next`` files (where one is still there), not ``<table>.parquet``."""

TABLES = ("runs", "attempts")


class _TableCommit(pydantic.BaseModel):
    """What ``COMMIT_FILE`` holds: the tables a rewrite replaces."""

    model_config = pydantic.ConfigDict(extra="forbid")
    tables: list[Literal["runs", "attempts"]]


def _staged(directory: Path, table: str) -> Path:
    return directory / f".{table}.parquet.next"


def replace_tables(directory: Path, tables: dict[str, pa.Table]) -> None:
    """Rewrite a run's tables as one step: whatever kills the process, and wherever, every reader
    (and the next writer) sees all the old tables or all the new ones, never one of each (a
    ``runs`` row whose attempts are gone, which ``--resume`` would take as done).

    Each table is staged as ``.<table>.parquet.next``; writing ``COMMIT_FILE`` (a rename) is the
    step that commits them all; then each is renamed into place and the commit file removed.
    Until then :func:`read_table` reads the staged tables the commit names, and the next writer
    of the run (:class:`RunLock`) finishes the commit (:func:`settle_tables`)."""
    settle_tables(directory)
    for table, rows in tables.items():
        atomic_write_table(rows, _staged(directory, table))
    commit = _TableCommit(tables=[t for t in TABLES if t in tables])
    _atomic_write_text(commit.model_dump_json() + "\n", directory / COMMIT_FILE)
    step_for_tests()
    settle_tables(directory)


def _committed(directory: Path) -> list[str]:
    """The tables a commit cut short still names (empty: none is pending)."""
    path = directory / COMMIT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path}: unreadable: {error}") from None
    try:
        return list(_TableCommit.model_validate_json(text).tables)
    except pydantic.ValidationError as error:
        raise ResultsError(f"{path}: not a misfit-bench table commit: {error.errors()[0]['msg']}") from None


def settle_tables(directory: Path) -> None:
    """Finish a table rewrite cut short: a committed one is installed (its staged tables renamed
    into place), an uncommitted one's staged tables are removed; the run reads the same before
    and after. Every writer of a run does this on taking its lock."""
    for table in _committed(directory):
        staged = _staged(directory, table)
        if staged.exists():
            os.replace(staged, directory / f"{table}.parquet")
            step_for_tests()
    (directory / COMMIT_FILE).unlink(missing_ok=True)
    for table in TABLES:
        _staged(directory, table).unlink(missing_ok=True)


def _table_file(directory: Path, table: str) -> Path:
    """Where a run's merged ``table`` is now: its staged file while a commit names it."""
    staged = _staged(directory, table)
    if table in _committed(directory) and staged.exists():
        return staged
    return directory / f"{table}.parquet"


def replace_folder(target: Path, fill: Callable[[Path], None]) -> None:
    """Replace the folder ``target`` with one ``fill`` writes, so that no interrupt or kill loses
    the previous one: ``fill`` writes a staged copy (``.<name>.tmp/<name>``, one level down so
    no command lists it as a run); only once it is whole is the previous folder renamed aside
    (``.<name>.old/<name>``), the staged one renamed into place, and the previous one removed.
    SIGINT and SIGTERM wait for the two renames, and a rename that fails puts the previous
    folder back; a kill between them leaves it aside, which :func:`restore_folder` puts back (the
    next replacement calls it first)."""
    staging_root, old_root = _aside(target, "tmp"), _aside(target, "old")
    staging = staging_root / target.name
    restore_folder(target)
    shutil.rmtree(staging_root, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        fill(staging)
        pause_for_tests("staged")
        shutil.rmtree(old_root, ignore_errors=True)  # restore_folder ran first: nothing to keep here
        old_root.mkdir()
        with _signals_deferred():
            if target.exists():
                target.rename(old_root / target.name)
                step_for_tests()
            staging.rename(target)
    finally:  # a rename that failed (or an interrupt in fill) leaves the previous folder in place
        restore_folder(target)
        shutil.rmtree(staging_root, ignore_errors=True)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive inside the block are handled when it ends, as they would
    have been (by the handlers in place before it). Off the main thread, where Python cannot
    install a handler, nothing is deferred."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, lambda received, frame: caught.append(received))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if caught:
            signal.raise_signal(caught[0])


def restore_folder(target: Path) -> bool:
    """Put the previous folder back when a :func:`replace_folder` was killed between its two
    renames (no ``target``, the previous one aside with its manifest), and remove what a killed
    replacement left beside ``target``; whether it put one back."""
    old = _aside(target, "old") / target.name
    restored = not target.exists() and (old / MANIFEST_FILE).is_file()
    if restored:
        old.rename(target)
    if target.exists():  # what is beside it now is a replacement cut short: garbage
        shutil.rmtree(_aside(target, "tmp"), ignore_errors=True)
        shutil.rmtree(_aside(target, "old"), ignore_errors=True)
    return restored


def _aside(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}")


def _atomic_write_text(text: str, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)


class ResultsWriter:
    """Buffers finished cells and flushes them as parquet parts (every ``flush_every`` cells
    or ``flush_after_s`` seconds), so memory stays flat however many cells a run has."""

    def __init__(self, directory: Path, flush_every: int = 50, flush_after_s: float = 2.0) -> None:
        self.directory = directory
        self.parts = directory / PARTS_DIR
        self.parts.mkdir(parents=True, exist_ok=True)
        self.flush_every, self.flush_after_s = flush_every, flush_after_s
        self._runs: list[dict[str, Any]] = []
        self._attempts: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._part = _next_part_number(self.parts)
        self.cells_written = 0

    def add(self, run: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
        self._runs.append(run)
        self._attempts.extend(attempts)
        if len(self._runs) >= self.flush_every or time.monotonic() - self._last_flush > self.flush_after_s:
            self.flush()

    def flush(self) -> None:
        """The buffered cells as one part: attempts first, since a runs part commits its cells
        (an attempts part without its runs part is never read)."""
        if not self._runs:
            return
        name = f"{self._part:06d}.parquet"
        atomic_write_table(
            pa.Table.from_pylist(self._attempts, schema=columns.ATTEMPTS), self.parts / f"attempts-{name}"
        )
        atomic_write_table(pa.Table.from_pylist(self._runs, schema=columns.RUNS), self.parts / f"runs-{name}")
        self.cells_written += len(self._runs)
        self._part += 1
        self._runs, self._attempts = [], []
        self._last_flush = time.monotonic()

    def finalize(self) -> None:
        """Merge parts into ``runs.parquet`` and ``attempts.parquet`` (sorted, stable).

        Readers see the same cells at every instant of the merge, so an interruption anywhere
        in it loses or doubles nothing: both tables are replaced in one step
        (:func:`replace_tables`), :func:`read_table` takes a cell from the merged file before
        any part, and the runs parts go before their attempts parts."""
        self.flush()
        runs = read_table(self.directory, "runs").sort_by([("cell_id", "ascending")])
        attempts = read_table(self.directory, "attempts").sort_by(
            [("cell_id", "ascending"), ("started_at", "ascending")]
        )
        replace_tables(self.directory, {"runs": runs, "attempts": attempts})
        pause_for_tests("merged")
        for part in [*self.parts.glob("runs-*"), *self.parts.iterdir()]:  # commit markers first
            part.unlink(missing_ok=True)
        self.parts.rmdir()


PAUSE_ENV = "MISFIT_BENCH_TEST_PAUSE"
"""Test hook, ``<moment>:<file>``: the process creates ``<file>`` (holding its pid) when it
reaches ``<moment>``, so a test can signal a real ``bench run`` at exactly that moment.
``merged`` (in :meth:`ResultsWriter.finalize`, once the merged tables are written and before the
parts are removed) and ``created`` (:func:`bench.run.suite.run_suite`: the run's folder made and
locked, its manifest not yet written) and ``staged`` (:func:`replace_folder`: ``bench merge``'s or
``bench baseline update``'s new folder written whole, the previous one not yet touched) then wait
for the signal; ``expanding`` (:func:`bench.run.suite.plan_suite`, as
the plan's expansion starts) goes on, so the signal lands inside the expansion."""

KILL_ENV = "MISFIT_BENCH_TEST_KILL_AT"
"""Test hook, a number N: the process kills itself (SIGKILL, nothing runs after it) right after
its N-th step of writing tables: each table file renamed into place (a part, a staged table),
each commit of :func:`replace_tables` and each staged table it installs, and a folder moved aside
by :func:`replace_folder`. A test walks N up from 1 to kill a real ``bench run --rerun`` at every
one of its writes."""

_steps = [0]


def step_for_tests() -> None:
    """One step of writing tables done: SIGKILL here if the test hook names this step."""
    wanted = os.environ.get(KILL_ENV)
    if not wanted:
        return
    _steps[0] += 1
    if _steps[0] == int(wanted):
        os.kill(os.getpid(), signal.SIGKILL)


def reached_for_tests(moment: str) -> bool:
    """Create the marker file if the test hook names ``moment``; whether it did."""
    wanted, _, marker = os.environ.get(PAUSE_ENV, "").partition(":")
    if wanted != moment or not marker:
        return False
    Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    return True


def pause_for_tests(moment: str) -> None:
    if not reached_for_tests(moment):
        return
    while True:  # until a signal handler raises (SIGINT, SIGTERM) or the process is killed
        time.sleep(3600)


def _next_part_number(parts: Path) -> int:
    """One past the highest part number on disk (not their count: a merge interrupted while
    removing parts leaves gaps, and a count would overwrite a part that is still there)."""
    numbers = [int(match.group(1)) for p in parts.iterdir() if (match := _PART_NAME.fullmatch(p.name))]
    return max(numbers, default=-1) + 1


_PART_NAME = re.compile(r"(?:runs|attempts)-(\d+)\.parquet")


def read_table(directory: Path, table: str) -> pa.Table:
    """One table of a run, merged from ``<table>.parquet`` and any parts left by an
    interrupted or still-running run.

    A cell is counted once: each runs piece (the merged file, then the parts in order) keeps
    only cells no earlier piece had, and a cell's attempts come from the piece its runs row
    came from. A merge interrupted after writing ``runs.parquet`` but before removing the parts
    therefore reads exactly like the finished merge."""
    schema = columns.RUNS if table == "runs" else columns.ATTEMPTS
    try:
        pieces = list(_pieces(directory, table, schema))
    except (OSError, pa.ArrowException) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ResultsError(f"{directory}: cannot read the {table} table: {first_line}") from None
    if not pieces:
        return schema.empty_table()
    return _fill_defaults(pa.concat_tables(pieces))


def _fill_defaults(table: pa.Table) -> pa.Table:
    """Columns added after a run was written read back as that run would have written them:
    ``agent`` is "" (a built-in adapter) in a run from before schema 3, ``language`` is
    "python" in one from before schema 5."""
    for name, value in (("agent", ""), ("language", "python")):
        if name in table.column_names:
            index = table.column_names.index(name)
            table = table.set_column(index, table.field(index), pc.fill_null(table.column(index), value))
    return table


def _pieces(directory: Path, table: str, schema: pa.Schema) -> Iterator[pa.Table]:
    part_dir = directory / PARTS_DIR
    names = sorted(p.name.removeprefix("runs-") for p in part_dir.glob("runs-*.parquet")) if part_dir.is_dir() else []
    sources = [(part_dir / f"runs-{name}", part_dir / f"{table}-{name}") for name in names]
    # The merged file counts only once its runs table exists (attempts.parquet alone is a merge
    # cut short by an older version, whose parts are all still there).
    if (runs_file := _table_file(directory, "runs")).exists():
        sources.insert(0, (runs_file, _table_file(directory, table)))
    if len(sources) == 1:  # the common case, a finished run: nothing to deduplicate
        if sources[0][1].exists():
            yield _read(sources[0][1], schema)
        return
    seen: pa.Array = pa.array([], pa.string())
    for runs_path, table_path in sources:
        whole = table == "runs"
        runs = _read(runs_path, columns.RUNS) if whole else _read(runs_path, columns.RUNS, ["cell_id"])
        cells = runs.column("cell_id").combine_chunks()
        cells = cells.filter(pc.invert(pc.is_in(cells, value_set=seen)))
        seen = pa.concat_arrays([seen, cells])
        piece = runs if whole else _read(table_path, schema) if table_path.exists() else None
        if piece is not None:
            yield piece.filter(pc.is_in(piece.column("cell_id"), value_set=cells))


def _read(path: Path, schema: pa.Schema, only: list[str] | None = None) -> pa.Table:
    """One parquet file read as the declared table. Reading with ``schema=`` alone would drop a
    column it does not know and fill a missing one with nulls, so a foreign file (another
    tool's parquet dropped in ``parts/``) would read as rows of nulls: refused instead."""
    names = pq.read_schema(path).names
    foreign = sorted(set(names) - set(schema.names))
    if foreign:
        raise ResultsError(f"{path}: not a misfit-bench table: unknown column(s) {', '.join(foreign[:5])}")
    required = [f.name for f in schema if not f.nullable and f.name not in names]
    if required:
        raise ResultsError(f"{path}: not a misfit-bench table: missing column(s) {', '.join(required[:5])}")
    if schema is columns.RUNS and (only is None or "details" in only) and (text := _details_as_text(path)):
        # Schemas 1-3 stored details as JSON text: read as written, then typed.
        as_written = schema.set(schema.get_field_index("details"), pa.field("details", text))
        table = pq.read_table(path, schema=as_written, columns=only)
        index = table.column_names.index("details")
        typed = table.set_column(index, schema.field("details"), details.from_json(table.column(index)))
        return _checked(path, typed, schema)
    return _checked(path, pq.read_table(path, schema=schema, columns=only), schema)


OUTCOMES = pa.array(sorted(Outcome), pa.string())


def _checked(path: Path, table: pa.Table, declared: pa.Schema) -> pa.Table:
    """``table`` once its values are what :mod:`bench.results.columns` declares: parquet keeps a
    null in a column declared never null, and any text in ``outcome``, so a hand-edited table
    once reached every reader (a null ``sdk`` broke resume, an unknown outcome broke the report
    and passed the gate). One line naming the file and the column otherwise."""
    for name in table.column_names:
        if not declared.field(name).nullable and (nulls := table.column(name).null_count):
            raise ResultsError(f"{path}: column {name}: {nulls:,} null value(s) in a column that is never null")
    if declared is columns.RUNS and "outcome" in table.column_names:
        outcome = table.column("outcome")
        unknown = pc.unique(outcome.filter(pc.invert(pc.is_in(outcome, value_set=OUTCOMES)))).to_pylist()
        if unknown:
            raise ResultsError(
                f"{path}: column outcome: unknown outcome(s) {', '.join(map(repr, unknown[:3]))}; "
                f"the outcomes are {', '.join(Outcome)}"
            )
    return table


def _details_as_text(path: Path) -> pa.DataType | None:
    """The text type ``details`` was written as (string; large_string from pandas), or None."""
    written = pq.read_schema(path)
    if "details" not in written.names:
        return None
    kind = written.field("details").type
    return kind if pa.types.is_string(kind) or pa.types.is_large_string(kind) else None


LOCK_FILE = ".writer.lock"


class RunLock:
    """The one writer of a run folder (``bench run``, ``--resume``), held until it ends.

    An advisory ``flock`` on ``.writer.lock``: the kernel drops it when its holder dies however
    it dies (SIGKILL included), so a lock left by a dead process is simply taken over, and no
    pid file can go stale. The file records who holds it, for the refusal message. The
    descriptor is not inherited, so a child (the Claude CLI) never keeps a run locked."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._file: Any = None

    def acquire(self) -> RunLock:
        import fcntl

        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise ResultsError(
                f"{self.path.parent}: another writer holds this run ({holder}); wait for it or stop it"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}\n")
        handle.flush()
        self._file = handle
        try:
            settle_tables(self.path.parent)  # a rewrite the previous writer's death cut short
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the flock
            self._file = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    _atomic_write_text(json.dumps(manifest, indent=2, default=str) + "\n", directory / MANIFEST_FILE)


def read_manifest(directory: Path) -> dict[str, Any]:
    """The run's manifest, validated by :class:`bench.results.manifest.Manifest` within its size
    and depth bounds: every reader gets the types it declares, or a :class:`ResultsError` of one
    line naming the file and the field."""
    path = directory / MANIFEST_FILE
    try:
        if (size := path.stat().st_size) > MANIFEST_MAX_BYTES:
            raise ResultsError(f"{path}: {size:,} bytes; a manifest may have at most {MANIFEST_MAX_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{directory}: not a misfit-bench run (no {MANIFEST_FILE})") from None
    except (OSError, ValueError) as error:
        raise ResultsError(f"{path}: unreadable manifest: {error}") from None
    try:
        return parse_manifest(text, str(path))
    except ManifestError as error:
        raise ResultsError(str(error)) from None


LATEST = "latest"
"""The file under a results root that names its newest run's folder."""


def point_latest(results_root: Path, directory: Path) -> None:
    """Make ``results/latest`` name ``directory`` (a sibling folder), atomically; a ``latest``
    link left by an older version is replaced by the file."""
    _atomic_write_text(directory.name + "\n", results_root / LATEST)


def latest_run(results_root: Path) -> Path | None:
    """The run folder ``results_root/latest`` names, or None when there is none."""
    return _follow(results_root / LATEST)


def _follow(path: Path) -> Path | None:
    """The run folder a ``latest`` pointer file (or an older ``latest`` link) names; None when
    ``path`` is neither, or names no folder."""
    if path.is_symlink():
        return path.resolve() if path.is_dir() else None
    if not path.is_file() or path.stat().st_size > 1024:
        return None
    try:
        name = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    target = path.parent / name
    return target.resolve() if name and Path(name).name == name and target.is_dir() else None


def resolve_run(reference: str | Path | None, results_root: Path = Path("results")) -> Path:
    """A run directory from a path, a suite id under ``results_root``, a ``latest`` pointer
    (``results/latest``), or None for the latest under ``results_root``."""
    candidates = [results_root / LATEST] if reference is None else [Path(reference), results_root / str(reference)]
    for candidate in candidates:
        candidate = _follow(candidate) or candidate
        if (candidate / MANIFEST_FILE).exists():
            return candidate.resolve()
    looked = " nor ".join(dict.fromkeys(str((c / MANIFEST_FILE).absolute()) for c in candidates))
    raise ResultsError(f"{reference or results_root / LATEST}: not a misfit-bench run (no {looked})")


def load_run(reference: str | Path | None = None, results_root: Path = Path("results")) -> dict[str, Any]:
    """The public loader notebooks use: {'runs': DataFrame, 'attempts': DataFrame, 'manifest': dict}.

    Columns keep their declared types (:func:`to_pandas`), for runs of every schema version."""
    directory = resolve_run(reference, results_root)
    return {
        "runs": to_pandas(read_table(directory, "runs")),
        "attempts": to_pandas(read_table(directory, "attempts")),
        "manifest": read_manifest(directory),
        "path": directory,
    }


def to_pandas(table: pa.Table) -> Any:
    """A table as a DataFrame whose integer and boolean columns stay integer and boolean when
    they hold nulls: pandas' nullable ``Int64`` and ``boolean`` (``<NA>`` for a null), where its
    default turns a nullable integer into float64 and a nullable boolean into object. A struct
    (``details``) keeps its field types too, as pandas' Arrow dtype (``.struct.field(name)``)."""
    return table.to_pandas(types_mapper=_nullable_dtype)


def _nullable_dtype(arrow_type: pa.DataType) -> Any:
    import pandas as pd

    if pa.types.is_struct(arrow_type):  # typed fields: runs.details.struct.field("strategy")
        return pd.ArrowDtype(arrow_type)
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def harness_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("misfit-bench")
    except PackageNotFoundError:
        return "unknown"


def command_line() -> str:
    return " ".join(sys.argv)
