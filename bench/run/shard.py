"""A shard process of ``bench run --procs`` (``python -m bench.run.shard FD``, started by
bench.run.procs): the job and its finished plans on stdin (pickled by the parent), its cells run
by bench.run.suite, each finished cell sent back on the pipe ``FD`` in bench.run.procs' frames.

Its own module so that bench.run.procs (imported by bench.run.suite to start the shards) never imports
bench.run.suite back.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

from bench.run.procs import send


def main(fd: int) -> None:
    """A shard process: read the job on stdin, run its cells, send each back on ``fd``."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background parent starts us with it ignored
    signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    job = pickle.loads(sys.stdin.buffer.read())  # written by our own parent, bench.run.procs
    from bench.run.suite import run_shard_job  # after the handlers: an interrupt while it loads ends the shard

    with os.fdopen(fd, "wb") as stream:
        try:
            closed = run_shard_job(job, lambda record: send(stream, record))
        except KeyboardInterrupt:
            os._exit(130)  # the parent records what was sent; nothing left to flush here
        send(stream, closed)
    os._exit(0)  # see bench.cli.main: the SDKs' leftover clients would only make noise at exit


if __name__ == "__main__":
    main(int(sys.argv[1]))
