-- Deploy pgflight:tables/runs_idempotency_partial
-- requires: tables/runs
-- Issue 18 (WAL per step): the idempotency key is unique per workspace only where one is given.
-- The unique constraint indexed every run, keyless ones included (null keys never conflict), so
-- each submit wrote an entry no lookup reads (87 B of WAL per no-op step), and submit_run's
-- ON CONFLICT made every insert a speculative one (a confirm record, 48 B). The partial unique
-- index keeps the same guarantee; ON CONFLICT names its predicate (submit_run, submit_runs).
begin;
set local role pgflight_owner;

create unique index idempotency_key_is_unique_per_workspace_idx on pgflight.runs (workspace_id, idempotency_key)
  where idempotency_key is not null;
alter table pgflight.runs drop constraint idempotency_key_is_unique_per_workspace;

commit;
