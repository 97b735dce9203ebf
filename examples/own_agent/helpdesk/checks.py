"""What correct means for this app's tickets, for misfit-bench's `wrong` faults and the fixture."""

from __future__ import annotations

from helpdesk.models import Ticket


def check(ticket: Ticket) -> str | None:
    """The reason an answer to the benchmark's ticket is wrong, or None when it is right."""
    if ticket.label != "bug":
        return f"label is {ticket.label}, expected bug"
    return None


def fake_lookup_customer(email: str) -> dict[str, str]:
    """Stands in for the CRM when the benchmark's model calls lookup_customer."""
    return {"email": email, "plan": "team"}
