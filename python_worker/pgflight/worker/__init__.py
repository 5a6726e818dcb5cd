"""
The worker runtime: claim, run, heartbeat, complete — with nothing held while a step runs.

::

    from pgflight.worker import Worker
    Worker(dsn, load_modules(["myapp.recipes"]), concurrency=8).run()   # until SIGTERM / SIGINT

Split by job (see :mod:`pgflight.worker.runtime` for how they fit together):

- :mod:`~pgflight.worker.runtime`: :class:`Worker`, which builds the parts and runs them;
- :mod:`~pgflight.worker.producer`: every claim, in one place;
- :mod:`~pgflight.worker.executor`: running claimed steps within their deadlines;
- :mod:`~pgflight.worker.completer`: completions in batches, failures, releases;
- :mod:`~pgflight.worker.listener` and :mod:`~pgflight.worker.tickets`: LISTEN and wake tickets;
- :mod:`~pgflight.worker.shutdown`: the graceful stop;
- :mod:`~pgflight.worker.calls`: the database calls, typed by the function called;
- :mod:`~pgflight.worker.threads`: the database and recipe threads and the event loop's inbox;
- :mod:`~pgflight.worker.common`: limits, exceptions and log wording the parts share.

The heartbeat is :mod:`pgflight.heartbeat`; the SQL the worker sends is in :mod:`pgflight.db`.
"""

from pgflight.db.wake import CLAIM_WITH_TICKET, claim_with_ticket
from pgflight.worker.common import (
    EXIT_RESTART,
    FAR_DEADLINE_S,
    PREPARED_MODES,
    UNSERVED_SKIP_S,
    DeadlineExceeded,
    UndecodableInput,
    WorkerRestart,
)
from pgflight.worker.runtime import Worker
from pgflight.worker.threads import DbThreads, Inbox, StepThreads, Wake
from pgflight.worker.tickets import WakeTickets

__all__ = [
    "CLAIM_WITH_TICKET",
    "EXIT_RESTART",
    "FAR_DEADLINE_S",
    "PREPARED_MODES",
    "UNSERVED_SKIP_S",
    "DbThreads",
    "DeadlineExceeded",
    "Inbox",
    "StepThreads",
    "UndecodableInput",
    "Wake",
    "WakeTickets",
    "Worker",
    "WorkerRestart",
    "claim_with_ticket",
]
