"""The golden landing matrix: what every built-in adapter cell did on every default scenario
(outcome, model calls, exception, billed and reported tokens), committed so that an SDK upgrade
that changes a behaviour or a bill fails a test that says which cells changed and how (that
failure is the product working). Tokens are exact: every id the provider draws is a function of
the cell (issue 48). One SDK's bill depends on the machine: the Claude Code CLI writes the OS
release and its working directory (under the temp folder) into every request, so its tokens are
compared only on a machine like the one the golden file was written on (:data:`MACHINE_FILE`).

    python -m bench.results.golden write [RUN]     # rewrite tests/golden/default_matrix.tsv deliberately
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
from pathlib import Path

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.results.store import read_table, resolve_run

GOLDEN_FILE = Path(__file__).resolve().parents[2] / "tests" / "golden" / "default_matrix.tsv"
BUILTIN_SDKS = (
    "agentmaker", "anthropic-client", "claude-agent-sdk", "instructor", "langchain", "openai-agents", "openai-client",
    "pydantic-ai",
)  # fmt: skip
KEY = ["sdk", "mode", "variant", "protocol", "stream", "scenario"]
TOKENS = ["input_tokens_billed", "output_tokens_billed", "input_tokens_reported", "output_tokens_reported"]
VALUES = ["outcome", "model_calls", "exception_type", *TOKENS]
MACHINE_FILE = GOLDEN_FILE.with_suffix(".machine.json")
"""What of the machine the golden file was written on reaches some SDK's bill (:func:`machine`)."""
MACHINE_BOUND = ("claude-agent-sdk",)
"""SDKs whose requests carry the machine (:func:`machine`): their tokens are compared only on a
machine with the same values."""


def machine() -> dict[str, str]:
    """What the Claude Code CLI writes into every request's environment message besides the cell:
    ``OS Version: Linux <release>`` and its working directory, ``<temp folder>/misfit-claude-cwd``
    (adapters/claude_agent_sdk/adapter.py ``shared_workdir``)."""
    return {"os_release": platform.release(), "tempdir": tempfile.gettempdir()}


def golden_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The compared columns of the supported built-in cells, in a stable order."""
    frame = runs[runs["sdk"].isin(BUILTIN_SDKS) & (runs["outcome"] != Outcome.UNSUPPORTED)]
    frame = frame[KEY + VALUES].copy()
    frame["stream"] = frame["stream"].astype(bool)
    for name in ("model_calls", *TOKENS):
        frame[name] = frame[name].astype("Int64")
    frame["exception_type"] = frame["exception_type"].fillna("")
    return frame.sort_values(KEY).reset_index(drop=True)


def write(runs: pd.DataFrame, target: Path = GOLDEN_FILE) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    golden_frame(runs).to_csv(target, sep="\t", index=False)
    target.with_suffix(".machine.json").write_text(json.dumps(machine(), indent=2) + "\n")
    return target


def read(source: Path = GOLDEN_FILE) -> pd.DataFrame:
    frame = pd.read_csv(source, sep="\t", dtype={"exception_type": str}, keep_default_na=False)
    frame["stream"] = frame["stream"].astype(bool)
    for name in ("model_calls", *TOKENS):
        frame[name] = pd.to_numeric(frame[name].replace("", None)).astype("Int64")
    return frame


def golden_machine(source: Path = MACHINE_FILE) -> dict[str, str]:
    """The :func:`machine` the golden file was written on."""
    return dict(json.loads(source.read_text()))


def _describe(row: pd.Series, side: str) -> str:
    outcome, calls, exception = row[f"outcome{side}"], row[f"model_calls{side}"], row[f"exception_type{side}"]
    if pd.isna(outcome):
        return "absent"
    text = f"{outcome} after {calls} call(s)"
    text = f"{text}, {exception}" if exception else text
    billed = f"{row[f'input_tokens_billed{side}']}+{row[f'output_tokens_billed{side}']}"
    reported = f"{row[f'input_tokens_reported{side}']}+{row[f'output_tokens_reported{side}']}"
    return f"{text}, tokens billed {billed}, reported {reported}"


def differences(current: pd.DataFrame, golden: pd.DataFrame, tokens_of_machine_bound: bool = True) -> list[str]:
    """One line per cell that changed, appeared or disappeared: ``cell: golden -> now``.
    ``tokens_of_machine_bound=False`` leaves the tokens of the :data:`MACHINE_BOUND` SDKs out
    (another machine than :data:`MACHINE_FILE`'s: the caller says so)."""
    merged = golden.merge(golden_frame(current), on=KEY, how="outer", suffixes=("_golden", "_now"), indicator=True)
    lines = []
    for _, row in merged.iterrows():
        compared = VALUES if tokens_of_machine_bound or row["sdk"] not in MACHINE_BOUND else VALUES[:3]
        same = row["_merge"] == "both" and all(str(row[f"{v}_golden"]) == str(row[f"{v}_now"]) for v in compared)
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
