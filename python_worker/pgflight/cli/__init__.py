"""
The ``pgflight`` command line.

- :mod:`~pgflight.cli.app`: the root app, ``db`` and ``migrate``, plugin loading, :func:`main`.
- :mod:`~pgflight.cli.context`: the shared :class:`~pgflight.cli.context.Cli` (consoles,
  database, connection, JSON mode), the error printer and the exit codes.
- :mod:`~pgflight.cli.ops`: the worker, submitting and inspecting runs, workers and approvals.
- :mod:`~pgflight.cli.agent`: ``trace`` and ``export-dataset``.
- counts, durations, bytes and money are written by :mod:`pgflight.fmt` (shared with the inspector
  and the review report).
"""

from pgflight.cli.app import app, main

__all__ = ["app", "main"]
