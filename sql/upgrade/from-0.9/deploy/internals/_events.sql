-- Deploy pgflight:internals/_events
-- Defines: _event(), _notify_ready().
-- The transition log append and the wake-up NOTIFY (its payload a wake ticket since @v0.3.0).
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- Append one row to the transition log. Called in the same transaction as the change.
create or replace function pgflight._event(
  p_run_id bigint, p_step_id bigint, p_attempt_id bigint, p_from text, p_to text,
  p_worker_id bigint, p_reason text, p_actor text default null, p_detail jsonb default null)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  -- PL/pgSQL rather than SQL: its INSERT plan is cached across calls, a SQL function's is not
  insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
  values (pgflight._now(), p_run_id, p_step_id, p_attempt_id, p_from, p_to, p_worker_id, p_reason, p_actor, p_detail);
end
$$;
comment on function pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb) is
  'Internal: append one events row.';

-- Wake idle workers. The payload is this transaction's id (never user data, C35): a *wake ticket*.
-- A pgflight worker that hears it takes a session advisory lock on wake_ticket_key(a key of its
-- recipe set and the ticket) on its LISTEN connection and claims only if it got it, so one idle
-- process per recipe group claims instead of all of them (issue 18, README "Wake-ups (LISTEN)").
-- wake_ticket_key mixes in the engine's secret and the login's worker lanes: a login that is not
-- a worker of those workspaces cannot compute the key, so it cannot win the ticket first; a worker in
-- another language may treat any notification on pgflight_ready as "claim now", as before.
-- PostgreSQL folds identical notifications of one transaction into one, and the id is the same
-- throughout a transaction, so a transaction still sends at most one. The transaction has
-- written the step that became ready, so it has an id already: asking for it assigns nothing.
create or replace function pgflight._notify_ready()
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_catalog.pg_notify('pgflight_ready', pg_catalog.pg_current_xact_id()::text);
end
$$;
comment on function pgflight._notify_ready() is
  'Internal: NOTIFY pgflight_ready with the transaction id as payload (a wake ticket, never user data).';

commit;
