"""pgflight: a durable execution engine on PostgreSQL."""

__version__ = "1.0.0"
