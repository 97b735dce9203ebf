"""The text of a published file as a reader gets it: a gzip file inflated, a parquet file's every
value (its bytes are compressed, so a search of them finds nothing), anything else decoded. What the
publish and dataset tests search for a machine path or a prompt."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def published_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        return json.dumps({"columns": table.schema.names, "rows": table.to_pylist()}, default=str)
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")
