-- Deploy pgflight:internals/_row_triggers
-- Defines: _row_triggers_off().
-- Issue 18: a bulk write whose rows' foreign keys hold by construction (submit_runs of 500 runs
-- or more: it created the rows they name; purge_finished: it deletes every row that names a run
-- or step it locked) runs with session_replication_role = replica, so the per-row key checks and
-- ON DELETE CASCADE triggers do not fire. Whether it may is decided here, once for both:
-- PostgreSQL 15 or later (has_parameter_privilege is 15's, so it is called dynamically and a 14
-- server keeps its triggers instead of failing to parse), and this function's owner holding SET on
-- the parameter (granted only by a superuser's deploy: roles/owner_sets_replication_role gave it to
-- pgflight_owner, roles/pgflight_privileged moves it and this function to pgflight_privileged, so
-- the deploy login inherits no cluster-wide SET). SECURITY DEFINER for that: its callers are the
-- engine's own definer functions, and no lane may execute it. While it is replica no ordinary
-- trigger fires, a DBA's own included (docs/security.md: revoke the grant to keep them).
begin;

-- As pgflight_owner, unless the function is pgflight_privileged's (roles/pgflight_privileged, a
-- superuser's deploy): then the deployer, a superuser as only one could hand it over, replaces
-- it as itself and it stays pgflight_privileged's (CREATE OR REPLACE keeps the owner; as
-- pgflight_owner this failed with "must be owner").
do $$
begin
  if (select pg_catalog.pg_get_userbyid(p.proowner) from pg_catalog.pg_proc p
       where p.oid = pg_catalog.to_regprocedure('pgflight._row_triggers_off()')) is distinct from 'pgflight_privileged' then
    perform pg_catalog.set_config('role', 'pgflight_owner', true);
  end if;
end
$$;

-- Switch this transaction to session_replication_role = replica (set_config is_local: an error
-- rolls it back with the transaction or the caller's savepoint) and return the value to restore
-- with set_config(..., true) after the writes; null when it may not, or already is replica: then
-- the caller writes with every trigger.
create or replace function pgflight._row_triggers_off()
returns text
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_before text := pg_catalog.current_setting('session_replication_role');
  v_may boolean := false;
begin
  if v_before = 'replica' or pg_catalog.current_setting('server_version_num')::integer < 150000 then
    return null;
  end if;
  execute 'select pg_catalog.has_parameter_privilege(''session_replication_role'', ''SET'')' into v_may;
  if not v_may then
    return null;
  end if;
  perform pg_catalog.set_config('session_replication_role', 'replica', true);
  return v_before;
end
$$;
comment on function pgflight._row_triggers_off() is
  'Internal: session_replication_role = replica for this transaction when its owner may set it; returns the value to restore, null when not switched.';
revoke all on function pgflight._row_triggers_off() from public;
grant execute on function pgflight._row_triggers_off() to pgflight_owner;

commit;
