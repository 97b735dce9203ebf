"""autogen-agentchat's registration for these tests, until the checkout is reinstalled.

The entry point is in pyproject.toml; an editable install made before it was added has no
``autogen-agentchat`` in its ``entry_points.txt``. Then this writes an installed-distribution folder
naming the same target into a temporary folder and puts it on ``sys.path`` and ``PYTHONPATH`` (the
workers inherit it), as tests/conftest.py does for the test plugin. Once installed, nothing is added.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bench.sdk import registry

ENTRY = "autogen-agentchat = adapters.autogen_agentchat:PLUGIN"

if "autogen-agentchat" not in registry.registrations():
    _folder = Path(tempfile.mkdtemp(prefix="misfit-autogen-")) / "misfit_bench_autogen_agentchat-0.0.0.dist-info"
    _folder.mkdir()
    (_folder / "METADATA").write_text("Metadata-Version: 2.1\nName: misfit-bench-autogen-agentchat\nVersion: 0.0.0\n")
    (_folder / "entry_points.txt").write_text(f"[misfit_bench.adapters]\n{ENTRY}\n")
    sys.path.insert(0, str(_folder.parent))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(_folder.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
