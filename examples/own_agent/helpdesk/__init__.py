"""A small help-desk app: two agents that triage support tickets."""
