"""What a test module that blocks at import waits on (tests/own/test_hostile_agents.py): the test
sets it once the harness has given up on the import, so the import's thread finishes."""

import threading

RELEASE = threading.Event()
