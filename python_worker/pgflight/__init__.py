"""pgflight: a durable execution engine on PostgreSQL."""

__version__ = "0.9.0"
