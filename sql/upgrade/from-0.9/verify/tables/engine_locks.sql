-- Verify pgflight:tables/engine_locks
select scope, holder_pid, holder_started_at from pgflight.engine_locks where false;
