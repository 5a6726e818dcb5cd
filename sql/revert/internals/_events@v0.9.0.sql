-- Revert pgflight:internals/_events@v0.9.0: restores the previous definition, deploy/internals/_events@v0.3.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _event(), _notify_ready().
-- The transition log append and the wake-up NOTIFY.
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

-- Wake idle workers. The payload is empty (never user data, C35), and PostgreSQL folds identical
-- notifications of one transaction into one, so a transaction sends at most one.
create or replace function pgflight._notify_ready()
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_catalog.pg_notify('pgflight_ready', '');
end
$$;
comment on function pgflight._notify_ready() is 'Internal: NOTIFY pgflight_ready with an empty payload.';

commit;
