"""The golden landing matrix: what every built-in adapter cell did on every default scenario,
committed so that an SDK upgrade that changes a behaviour fails a test that says which cells
changed and how (that failure is the product working).

    python -m bench.results.golden write [RUN]     # rewrite tests/golden/default_matrix.tsv deliberately
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.results.store import read_table, resolve_run

GOLDEN_FILE = Path(__file__).resolve().parents[2] / "tests" / "golden" / "default_matrix.tsv"
BUILTIN_SDKS = ("agentmaker", "claude-agent-sdk", "langchain", "openai-agents", "pydantic-ai")
KEY = ["sdk", "mode", "variant", "protocol", "stream", "scenario"]
VALUES = ["outcome", "model_calls", "exception_type"]


def golden_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The compared columns of the supported built-in cells, in a stable order."""
    frame = runs[runs["sdk"].isin(BUILTIN_SDKS) & (runs["outcome"] != Outcome.UNSUPPORTED)]
    frame = frame[KEY + VALUES].copy()
    frame["stream"] = frame["stream"].astype(bool)
    frame["model_calls"] = frame["model_calls"].astype("Int64")
    frame["exception_type"] = frame["exception_type"].fillna("")
    return frame.sort_values(KEY).reset_index(drop=True)


def write(runs: pd.DataFrame, target: Path = GOLDEN_FILE) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    golden_frame(runs).to_csv(target, sep="\t", index=False)
    return target


def read(source: Path = GOLDEN_FILE) -> pd.DataFrame:
    frame = pd.read_csv(source, sep="\t", dtype={"exception_type": str}, keep_default_na=False)
    frame["stream"] = frame["stream"].astype(bool)
    frame["model_calls"] = frame["model_calls"].astype("Int64")
    return frame


def _describe(row: pd.Series, side: str) -> str:
    outcome, calls, exception = row[f"outcome{side}"], row[f"model_calls{side}"], row[f"exception_type{side}"]
    if pd.isna(outcome):
        return "absent"
    text = f"{outcome} after {calls} call(s)"
    return f"{text}, {exception}" if exception else text


def differences(current: pd.DataFrame, golden: pd.DataFrame) -> list[str]:
    """One line per cell that changed, appeared or disappeared: ``cell: golden -> now``."""
    merged = golden.merge(golden_frame(current), on=KEY, how="outer", suffixes=("_golden", "_now"), indicator=True)
    lines = []
    for _, row in merged.iterrows():
        same = row["_merge"] == "both" and all(str(row[f"{v}_golden"]) == str(row[f"{v}_now"]) for v in VALUES)
        if not same:
            cell = (
                "/".join(str(row[k]) for k in KEY[:4]) + ("/stream" if row["stream"] else "") + f" x {row['scenario']}"
            )
            lines.append(f"{cell}: {_describe(row, '_golden')} -> {_describe(row, '_now')}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] != "write":
        print(__doc__)
        return 2
    directory = resolve_run(argv[1] if len(argv) > 1 else None)
    print(write(read_table(directory, "runs").to_pandas()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
