-- Deploy pgflight:tables/engine_locks
-- requires: schema
-- The engine's own locks, as rows no login can lock. Advisory locks are executable by PUBLIC and
-- their keys were constants or computable from the source, so any login (a reader) could hold one
-- and stop every sweep or stall another tenant's claims, completions and model calls. A row here
-- can be locked only by whoever may UPDATE or SELECT ... FOR UPDATE the table: pgflight_owner,
-- that is the engine's own functions; no lane has a privilege on it.
--
-- One row per scope, created when first needed (insert ... on conflict do nothing) and locked in
-- the caller's transaction:
--   key:<workspace id>:<concurrency key>  a concurrency key: claimers and the sweep lock it FOR
--                                         UPDATE SKIP LOCKED (never wait), a freed slot FOR SHARE
--                                         (waits only for a claimer that is parking that key)
--   slots:<scope>                         an in-flight cap's stripes rebuilt (_set_slot_cap; the
--                                         sweep takes it SKIP LOCKED)
--   model_tokens:<workspace id>           a workspace's tokens-per-minute window (admission and
--                                         settlement take turns FOR UPDATE)
--   sweep_loop                            one sweep loop at a time: a lease, not a lock (the loop
--                                         commits between passes), held by the backend named in
--                                         holder_pid / holder_started_at while that backend lives
-- Key rows of keys that have no queued or leased attempt left are deleted by wake_parked_keys.
begin;
set local role pgflight_owner;

create table pgflight.engine_locks (
  scope             text primary key,
  holder_pid        integer,      -- sweep_loop: the backend holding the lease (null: free)
  holder_started_at timestamptz,  -- sweep_loop: that backend's start (pg_stat_activity.backend_start), so a reused pid is not taken for it
  constraint holder_is_named_whole check ((holder_pid is null) = (holder_started_at is null))
) with (fillfactor = 50);
insert into pgflight.engine_locks (scope) values ('sweep_loop');
comment on table pgflight.engine_locks is
  'The engine''s locks as rows no login can lock (no lane has a privilege on it): key:<ws>:<key>, '
  'slots:<scope>, model_tokens:<ws> locked in the caller''s transaction; sweep_loop a lease held by '
  'holder_pid (with holder_started_at, its backend_start) while that backend lives.';

commit;
