"""Point the official `openai` and `anthropic` clients at a running `bench serve` and print
what each fault looks like to them, in its real shape.

    bench serve --port 8787 &
    python examples/plain_clients.py http://127.0.0.1:8787
"""

from __future__ import annotations

import sys

import anthropic
import httpx
import openai

BEHAVIOURS = [
    "valid",
    "malformed",
    "schema_violation",
    "truncated",
    "refusal",
    "prose",
    {"http_error": 429},
    {"http_error": 529},
]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age", "email"],
    "additionalProperties": False,
}


def open_run(base: str, behaviour: object) -> dict:
    response = httpx.post(f"{base}/runs", json={"task": "person", "script": [behaviour]})
    response.raise_for_status()
    return response.json()


def openai_view(run: dict) -> str:
    client = openai.OpenAI(base_url=run["openai_base_url"], api_key="local", max_retries=0)
    try:
        completion = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Extract the person"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True},
            },
        )
    except openai.APIStatusError as error:
        return f"{type(error).__name__} {error.status_code}"
    choice = completion.choices[0]
    return f"finish_reason={choice.finish_reason} content={choice.message.content!r} refusal={choice.message.refusal!r}"


def anthropic_view(run: dict) -> str:
    client = anthropic.Anthropic(base_url=run["anthropic_base_url"], api_key="local", max_retries=0)
    try:
        message = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=512,
            messages=[{"role": "user", "content": "Extract the person"}],
            output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
        )
    except anthropic.APIStatusError as error:
        return f"{type(error).__name__} {error.status_code}"
    text = "".join(block.text for block in message.content if block.type == "text")
    return f"stop_reason={message.stop_reason} text={text!r}"


def main(base: str) -> None:
    for behaviour in BEHAVIOURS:
        print(f"== {behaviour}")
        print("   openai chat:", openai_view(open_run(base, behaviour)))
        print("   anthropic:  ", anthropic_view(open_run(base, behaviour)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8787")
