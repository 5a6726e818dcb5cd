"""pgflight: a durable execution engine on PostgreSQL."""

__version__ = "0.8.0"
