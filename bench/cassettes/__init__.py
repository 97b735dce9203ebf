"""Cassettes: real provider traffic, recorded once and replayed offline with faults on top.

This package owns the cassette file format (:mod:`bench.cassettes.format`, one JSON file per
exchange, versioned, ``extra="forbid"``), what is never written to one (:mod:`bench.cassettes.redact`),
the recording reverse proxy behind ``bench record`` (:mod:`bench.cassettes.record`), the rule that
matches a request to a cassette (:mod:`bench.cassettes.match`), reading a recorded reply as an
answer (:mod:`bench.cassettes.extract`), the import of VCR.py cassettes as the SDKs' test suites
record them (:mod:`bench.cassettes.vcr`), a folder of either (:mod:`bench.cassettes.folder`), and
the replay that answers a provider run from cassettes, applying the scenario's faults to the
recorded answer (:mod:`bench.cassettes.replay`). docs/record-replay.md is the user's guide.
"""

from bench.cassettes.folder import load_cassettes, skip_quietly
from bench.cassettes.format import CASSETTE_VERSION, Cassette, CassetteError
from bench.cassettes.match import CassetteMiss, Library
from bench.cassettes.record import RecordingProxy
from bench.cassettes.redact import Redaction
from bench.cassettes.replay import Replay

__all__ = [
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteError",
    "CassetteMiss",
    "Library",
    "RecordingProxy",
    "Redaction",
    "Replay",
    "load_cassettes",
    "skip_quietly",
]
