"""The user's output type the own-agent tests write into a throwaway project (as source text,
since the project is imported by the harness and by pytester the way a user's package is)."""

TICKET_MODEL = """
from typing import Literal
from pydantic import BaseModel, ConfigDict, Field

class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str
"""
