"""Token counts are real o200k_base BPE counts: quicktok (used at run time) must agree with
tiktoken's own BPE engine loaded with the same merge ranks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import quicktok
import tiktoken
from tiktoken_ext.openai_public import ENDOFPROMPT, ENDOFTEXT

from bench.core.tokens import count_json_tokens, count_tokens, split_for_stream
from bench.scenarios.tasks import TASKS

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

CORPUS = [
    "hello world",
    "Extract the person from this signature: 'Ada Lovelace (36) <ada@example.org>'",
    '{"name":"Ada Lovelace","age":36,"email":"ada@example.org",}',
    "Grüße aus Köln — naïve café, 東京都, emoji 🤖🧪 and tabs\t\tand\r\nnewlines\n\n",
    "def f(x):\n    return x ** 2  # don't\n",
    "I'm sure they'll've done it; WE'RE DONE. 1234567 3.14159",
    *(task.prompt for task in TASKS.values()),
    *(task.reference_json() for task in TASKS.values()),
]


def _load_quicktok_ranks() -> dict[bytes, int]:
    """Read quicktok's bundled vocabulary: u32 count, then (u16 length, bytes, u32 rank)."""
    data = (Path(quicktok.__file__).parent / "data" / "o200k.vocab").read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    ranks: dict[bytes, int] = {}
    offset = 4
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, offset)
        token = data[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
        ranks[token] = rank
        offset += 6 + length
    assert offset == len(data), "vocabulary file not fully consumed: format misread"
    return ranks


@pytest.fixture(scope="module")
def tiktoken_o200k() -> tiktoken.Encoding:
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PATTERN,
        mergeable_ranks=_load_quicktok_ranks(),
        special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    )


@pytest.mark.slow
def test_vocabulary_is_o200k_base(tiktoken_o200k: tiktoken.Encoding) -> None:
    # Published o200k_base facts: vocabulary size and the ids of "hello world".
    assert tiktoken_o200k.n_vocab == 200019
    assert tiktoken_o200k.encode("hello world") == [24912, 2375]


@pytest.mark.parametrize("text", CORPUS)
def test_counts_agree_with_tiktoken(text: str, tiktoken_o200k: tiktoken.Encoding) -> None:
    assert count_tokens(text) == len(tiktoken_o200k.encode_ordinary(text))


def test_json_counts_are_of_the_compact_serialisation() -> None:
    value = {"a": [1, 2, {"b": "ç"}]}
    assert count_json_tokens(value) == count_tokens('{"a":[1,2,{"b":"ç"}]}')
    assert count_json_tokens(None) == 0


@pytest.mark.parametrize("text", CORPUS)
def test_stream_pieces_reassemble_exactly(text: str) -> None:
    pieces = split_for_stream(text)
    assert "".join(pieces) == text
    assert all(pieces)
