"""
The run inspector (`pgflight ui`): server-rendered pages over one database, read through the
reader lane, with operator actions for operator logins; and the Prometheus metrics
(`pgflight metrics`). Entry points: :func:`serve`, :func:`create_app`, :func:`serve_metrics`.
"""

from pgflight.inspector.app import create_app, serve
from pgflight.inspector.metrics import serve_metrics

__all__ = ["create_app", "serve", "serve_metrics"]
