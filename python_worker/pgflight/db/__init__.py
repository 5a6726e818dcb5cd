"""
pgflight's database layer: the only package that imports psycopg.

- :mod:`pgflight.db.core`: one function per SQL API function (re-exported here).
- :mod:`pgflight.db.waits`: timers, event waits and events (re-exported here).
- :mod:`pgflight.db.streams`: stream writes and reads (re-exported here).
- :mod:`pgflight.db.connection`: PgBouncer-safe connections, pools, retry classification, LISTEN.
- :mod:`pgflight.db.agent` (when present): the agent functions, imported as ``pgflight.db.agent``.
- :mod:`pgflight.db.payload`: what jsonb refuses (NaN, NUL, lone surrogates, size), found before a write.
"""

from pgflight.db.core import *  # noqa: F403
from pgflight.db.core import Connection
from pgflight.db.core import __all__ as _core_all
from pgflight.db.streams import *  # noqa: F403
from pgflight.db.streams import __all__ as _streams_all
from pgflight.db.waits import *  # noqa: F403
from pgflight.db.waits import __all__ as _waits_all

__all__ = ["Connection", *_core_all, *_streams_all, *_waits_all]
