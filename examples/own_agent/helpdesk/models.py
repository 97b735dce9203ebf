"""The ticket both agents return."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Ticket(BaseModel):
    """What both agents return."""

    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature_request", "account"]
    priority: int = Field(ge=1, le=4, description="1 is the most urgent")
    summary: str = Field(min_length=5, max_length=200)
