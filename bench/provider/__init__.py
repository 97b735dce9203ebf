"""The local fault-injecting provider: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages on 127.0.0.1, each behaviour rendered in the real wire shape."""

from bench.provider.ledger import AttemptRecord
from bench.provider.server import LocalProvider, RunHandle

__all__ = ["AttemptRecord", "LocalProvider", "RunHandle"]
