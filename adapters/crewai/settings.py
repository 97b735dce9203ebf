"""What the crewai cells are built with, shared by the cell table (``adapter``, no SDK import)
and the worker's calls (``calls``, which imports crewai): one declaration, no import loop."""

from __future__ import annotations

OUTPUT_JSON = "output_json"
"""The variant of ``Task(output_json=M)``: the answer as the dict ``CrewOutput.json_dict``."""

GUARDRAIL_MAX_RETRIES = 3
"""``Task.guardrail_max_retries``' default (task.py:279): four agent runs in all."""

NATIVE_ANTHROPIC_MODEL = "claude-sonnet-4-5"
"""A model on CrewAI's native structured-output list (llms/providers/anthropic/completion.py:82-108)."""
