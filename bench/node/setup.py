"""Node and the locked packages of ``node/`` (package.json, package-lock.json, node_modules).

The TypeScript cells need a Node of :data:`MINIMUM_NODE` or newer and ``node/node_modules``
installed from the committed lock (``npm ci``, which installs exactly the lock). Where either is
missing, :func:`unavailable` says so in one line and those cells are ``unsupported``: the Python
matrix runs. Installed means every package the lock names at the top level is present at the
lock's version, so a lock changed by a pull is seen as not installed until ``npm ci`` runs.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

NODE_ROOT = Path(__file__).resolve().parents[2] / "node"
"""The Node side's folder in the checkout: package.json, the lock, the worker."""
WORKER = NODE_ROOT / "worker.mjs"
MINIMUM_NODE = (20, 6)
"""``module.register`` (the worker's resolution hook, node/resolve.mjs) is in Node 20.6 and later."""
INSTALL_HINT = "python -m bench.node install"


class NodeSetupError(Exception):
    """Node or npm could not install the Node side; the message says why on one line."""


class NodeMissing(NodeSetupError):
    """Node or npm is not installed: the TypeScript cells stay ``unsupported``, nothing failed."""


def node_binary() -> str | None:
    return shutil.which("node")


@functools.cache
def node_version(binary: str) -> tuple[int, ...] | None:
    """``node --version`` as numbers (``v20.20.2`` -> (20, 20, 2)); None when it does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return tuple(int(part) for part in done.stdout.strip().lstrip("v").split("."))
    except ValueError:
        return None


def locked(root: Path | None = None) -> dict[str, str]:
    """The top-level packages of the lock and their versions (``node_modules/<name>`` entries
    that are not nested in another package)."""
    root = root or NODE_ROOT
    lock = json.loads((root / "package-lock.json").read_text(encoding="utf-8"))
    packages = lock.get("packages", {})
    return {
        path.removeprefix("node_modules/"): entry["version"]
        for path, entry in packages.items()
        if path.startswith("node_modules/") and "/node_modules/" not in path and "version" in entry
    }


def installed_version(package: str, root: Path | None = None) -> str | None:
    """The version of ``package`` in ``node/node_modules``, or None when it is absent."""
    manifest = (root or NODE_ROOT) / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


INSTALLED_MARKER = ".misfit-installed"
"""Written into ``node_modules`` once ``npm ci`` has finished, holding the lock's sha256: an
install interrupted midway (``npm ci`` fills ``node_modules`` in place) or made from another
lock is never trusted, whatever package.json files it left."""


def _lock_digest(root: Path) -> str:
    import hashlib

    return hashlib.sha256((root / "package-lock.json").read_bytes()).hexdigest()


def install_finished(root: Path | None = None) -> bool:
    """Whether ``node_modules`` is the whole install of the committed lock (:data:`INSTALLED_MARKER`)."""
    root = root or NODE_ROOT
    try:
        return (root / "node_modules" / INSTALLED_MARKER).read_text(encoding="utf-8").strip() == _lock_digest(root)
    except OSError:
        return False


def missing_packages(root: Path | None = None) -> list[str]:
    """``name==locked`` for every locked top-level package absent or at another version,
    package.json's own dependencies first (the ones a user would recognise)."""
    direct = direct_dependencies(root)
    missing = [(name not in direct, name, want) for name, want in locked(root).items()
               if installed_version(name, root) != want]  # fmt: skip
    return [f"{name}=={want}" for _, name, want in sorted(missing)]


def direct_dependencies(root: Path | None = None) -> set[str]:
    """The packages package.json itself names (the SDKs and zod), as the lock records them."""
    lock = json.loads(((root or NODE_ROOT) / "package-lock.json").read_text(encoding="utf-8"))
    return set(lock["packages"][""]["dependencies"])


def unavailable(root: Path | None = None) -> str | None:
    """Why the Node side cannot run here, on one line; None when it can."""
    root = root or NODE_ROOT
    binary = node_binary()
    if binary is None:
        return f"Node is not installed (node not on PATH; Node {_dotted(MINIMUM_NODE)}+ needed, then {INSTALL_HINT})"
    have = node_version(binary)
    if have is None or have < MINIMUM_NODE:
        said = "an unreadable version" if have is None else _dotted(have)
        return f"Node {_dotted(MINIMUM_NODE)}+ is needed; {binary} is {said}"
    missing = missing_packages(root)
    if not missing and not install_finished(root):
        unfinished = f"the Node packages of {root.name}/ are not a finished install of its lock (interrupted?)"
        return f"{unfinished}: {INSTALL_HINT}"
    if missing:
        named = [m for m in missing if m.rpartition("==")[0] in direct_dependencies(root)] or missing[:1]
        more = len(missing) - len(named)
        shown = ", ".join(named) + (f" and {more} more" if more else "")
        return f"the Node packages of {root.name}/ are not installed from its lock ({shown}): {INSTALL_HINT}"
    return None


def install(root: Path | None = None) -> str:
    """``npm ci`` in ``root``: exactly the committed lock, no audit or fund requests. Returns what
    was done, on one line; raises :class:`NodeSetupError` when npm is missing or fails."""
    root = root or NODE_ROOT
    if not missing_packages(root) and install_finished(root):
        return f"the Node side is installed ({root}/node_modules matches package-lock.json)"
    npm = shutil.which("npm")
    if npm is None or node_binary() is None:
        raise NodeMissing(
            "Node and npm are not installed: the TypeScript cells stay unsupported (apt-get install nodejs npm)"
        )
    command = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise NodeSetupError(f"npm ci in {root} failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    (root / "node_modules" / INSTALLED_MARKER).write_text(_lock_digest(root) + "\n", encoding="utf-8")
    return f"installed the Node side: npm ci in {root} ({len(locked(root))} packages from package-lock.json)"


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
