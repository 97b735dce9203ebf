"""What is taken out before anything is published: absolute paths of the machine that made a run
(an environment's folder, a command line, a traceback's files) become ``<path>/NAME``. Request
bodies and prompts are not scrubbed here because they are never read: the dataset holds the runs
table only, whose columns the run's own report shows, never the attempts table.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

ABSOLUTE_PATH = re.compile(
    r"(?<![\w:/.\-~])/(?:root|home|tmp|work|usr|opt|var|private|Users|mnt|srv|etc|nix|run|snap|Volumes)"
    r"(?:/[^\s'\"(),;:]*)*"
)
"""An absolute path under a top-level folder of a Unix or macOS machine; a URL's path is not one
(it follows a host)."""


def scrub_text(text: str) -> str:
    """``text`` with every absolute path replaced by ``<path>/`` and its last part."""
    return ABSOLUTE_PATH.sub(lambda found: "<path>/" + found.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def scrub_value(value: Any) -> Any:
    """A manifest (or any JSON value) with :func:`scrub_text` applied to every string in it."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: scrub_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_value(item) for item in value]
    return value


def scrub_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs frame with :func:`scrub_text` applied to every string column (structs included)."""
    frame = frame.copy()
    for name in frame.columns:
        if frame[name].dtype == object or pd.api.types.is_string_dtype(frame[name]):
            frame[name] = frame[name].map(lambda value: scrub_value(value) if value is not None else value)
    return frame
