"""Real BPE token counts (o200k_base) for what crosses the wire, offline.

tiktoken downloads its vocabularies at first use, which this machine (and a CI box behind a
firewall) cannot do; quicktok ships o200k_base inside its wheel and counts without building a
Python list of ids. tests/core/test_tokens.py checks its counts against tiktoken's own BPE loaded
from the same ranks.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any


@cache
def _encoding() -> Any:
    import quicktok

    return quicktok.get_encoding("o200k_base")


def count_tokens(text: str) -> int:
    """BPE tokens in ``text``; special-token strings count as ordinary text, as in a prompt."""
    if not text:
        return 0
    return int(_encoding().count(text))


def count_json_tokens(value: Any) -> int:
    """Tokens in the compact JSON of ``value`` (how schemas and tool definitions are billed
    here: the real APIs render them into the prompt, in a form close to this)."""
    if value is None:
        return 0
    return count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def split_for_stream(text: str, max_pieces: int = 400) -> list[str]:
    """Split ``text`` into token-sized deltas, as a real stream sends them.

    Pieces are decoded token by token; a token that is not valid UTF-8 alone (part of a
    multi-byte character) is merged with the next, so every delta is a whole string.
    """
    if not text:
        return []
    encoding = _encoding()
    pieces: list[str] = []
    pending = b""
    for token in encoding.encode_ordinary(text):
        pending += encoding.decode_single_token_bytes(token)
        try:
            pieces.append(pending.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        pending = b""
    if pending:
        pieces.append(pending.decode("utf-8", errors="replace"))
    if len(pieces) > max_pieces:
        size = -(-len(pieces) // max_pieces)
        pieces = ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]
    return pieces
