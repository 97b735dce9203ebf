"""DSPy's calls, as a user writes them: imported only in the dspy environment's worker (adapter.py
declares the cells without the SDK; the worker preloads this module).

Before dspy is imported: litellm reads its model cost map from the package, never from GitHub
(``LITELLM_LOCAL_MODEL_COST_MAP``), and DSPy's disk cache directory is a temporary one; after, the
memory and disk caches are turned off (``dspy.configure_cache``, clients/__init__.py:19-54) and each
LM is built with ``cache=False``, so every cell reaches the provider and nothing leaves loopback.
One LM and one Predict per cell: a signature is the task's type, built once per task type.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))

import dspy
from pydantic import BaseModel

from bench.core.vocabulary import Protocol
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage

dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

MAX_TOKENS = 1024
"""``max_tokens``, required by the Anthropic Messages API; the same on every protocol."""


async def run(cell: Cell, task: Task, endpoint: Endpoint, *, chat: bool) -> AdapterResult:
    """One ``Predict.acall`` of the task's signature under the cell's adapter and LM."""
    adapter = dspy.ChatAdapter() if chat else dspy.JSONAdapter()
    predict = dspy.Predict(_signature(task.output_model))
    result = AdapterResult(details={"declaration": cell.note.split(";", 1)[0]})
    with dspy.context(lm=_lm(cell.protocol, endpoint), adapter=adapter, track_usage=True):
        try:
            prediction = await predict.acall(prompt=task.prompt)
        except Exception as error:  # DSPy's own: AdapterParseError, litellm's errors...
            result.exception = error
            return result
    result.output = prediction.toDict()
    result.usage = _usage(prediction.get_lm_usage())
    return result


def _lm(protocol: Protocol, endpoint: Endpoint) -> Any:
    """``dspy.LM`` on the provider: explicit ``api_base`` and ``api_key`` (they win over the
    OPENAI_* / ANTHROPIC_* variables), no cache; ``num_retries`` left at its default of 3
    (clients/lm.py:211)."""
    common: dict[str, Any] = {"api_key": endpoint.api_key, "cache": False, "max_tokens": MAX_TOKENS}
    if protocol is Protocol.ANTHROPIC:
        # DSPy's engine posts to ``<api_base>/messages``: its Anthropic base is the /v1 root
        # (_vendor/lm15/providers/anthropic.py:859, _vendor/lm15/compat.py:1107-1108).
        root = f"{endpoint.anthropic_base_url}/v1"
        return dspy.LM(f"anthropic/{endpoint.anthropic_model}", api_base=root, **common)
    model_type = "responses" if protocol is Protocol.RESPONSES else "chat"
    return dspy.LM(
        f"openai/{endpoint.openai_model}", model_type=model_type, api_base=endpoint.openai_base_url, **common
    )


def _signature(model: type[BaseModel]) -> Any:
    """The task's type as a DSPy signature: ``prompt -> <each field of the model, typed>``, the
    model's docstring as its instructions."""
    if (signature := _SIGNATURES.get(model)) is None:
        fields: dict[str, Any] = {"prompt": (str, dspy.InputField())}
        for name, info in model.model_fields.items():
            fields[name] = (info.annotation, dspy.OutputField(desc=info.description or ""))
        signature = _SIGNATURES[model] = dspy.Signature(fields, model.__doc__ or f"Answer as a {model.__name__}.")
    return signature


_SIGNATURES: dict[type[BaseModel], Any] = {}


def _usage(usage: dict[str, Any] | None) -> ReportedUsage | None:
    """DSPy's usage per LM (``track_usage``), summed: ``prompt_tokens`` / ``completion_tokens``."""
    if not usage:
        return None
    prompt = sum(entry.get("prompt_tokens") or 0 for entry in usage.values())
    completion = sum(entry.get("completion_tokens") or 0 for entry in usage.values())
    return ReportedUsage(prompt, completion)
