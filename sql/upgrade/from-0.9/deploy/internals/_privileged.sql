-- Deploy pgflight:internals/_privileged
-- requires: internals/_health internals/_row_triggers
-- Defines: _backend_started_at(), _row_triggers_on().
-- What the engine needs that the deploy login must not hold (least privilege): another backend's
-- start time in pg_stat_activity (pg_read_all_stats) and putting session_replication_role back
-- after a bulk write (SET on that parameter, cluster-wide). roles/pgflight_privileged makes these
-- two, _vacuum_horizon and _row_triggers_off (SECURITY DEFINER functions) owned by the NOLOGIN role
-- pgflight_privileged, which holds both privileges and of which no login is a member; EXECUTE
-- only for pgflight_owner (the engine's own definer functions), none for the lanes. Each reads or
-- sets exactly one thing: no query text, no user name, and never replica here.
begin;

-- As pgflight_owner, unless the functions are pgflight_privileged's (roles/pgflight_privileged, a
-- superuser's deploy): then the deployer, a superuser as only one could hand them over, replaces
-- them as itself and they stay pgflight_privileged's (CREATE OR REPLACE keeps the owner; as
-- pgflight_owner this failed with "must be owner").
do $$
begin
  if (select pg_catalog.pg_get_userbyid(p.proowner) from pg_catalog.pg_proc p
       where p.oid = pg_catalog.to_regprocedure('pgflight._backend_started_at(integer)')) is distinct from 'pgflight_privileged' then
    perform pg_catalog.set_config('role', 'pgflight_owner', true);
  end if;
end
$$;

-- The start time of backend p_pid (pg_stat_activity.backend_start), null when no such backend
-- lives: sweep_loop tells its lock's holder from a later backend that reuses the pid. Needs
-- pg_read_all_stats for another role's backend (pgflight_cron's, a worker's).
create or replace function pgflight._backend_started_at(p_pid integer)
returns timestamptz
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select a.backend_start from pg_catalog.pg_stat_activity a where a.pid = p_pid
$$;
comment on function pgflight._backend_started_at(integer) is
  'Internal: pg_stat_activity.backend_start of backend p_pid (null when none); owner-only.';
revoke all on function pgflight._backend_started_at(integer) from public;
grant execute on function pgflight._backend_started_at(integer) to pgflight_owner;

-- Put session_replication_role back, for this transaction, to p_before: what _row_triggers_off
-- returned (origin or local). Anything else is refused (22023): it never switches to replica.
create or replace function pgflight._row_triggers_on(p_before text)
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_before is null or p_before not in ('origin', 'local') then
    raise exception using errcode = '22023',
      message = format('session_replication_role may be restored only to origin or local, not %s',
                       coalesce(p_before, 'null')),
      hint = 'Pass what _row_triggers_off returned, when it returned a value.';
  end if;
  perform pg_catalog.set_config('session_replication_role', p_before, true);
end
$$;
comment on function pgflight._row_triggers_on(text) is
  'Internal: restore session_replication_role (origin or local) after _row_triggers_off; owner-only.';
revoke all on function pgflight._row_triggers_on(text) from public;
grant execute on function pgflight._row_triggers_on(text) to pgflight_owner;

commit;
