-- Deploy pgflight:roles/pgflight_privileged
-- requires: internals/_privileged
-- Least privilege for the deploy login: it is a member of pgflight_owner, so whatever the owner
-- holds the deploy login holds in its own sessions. pg_read_all_stats (every backend's query text,
-- in every database) and the cluster-wide SET on session_replication_role (skip the triggers and
-- foreign keys of any table it can write) move from pgflight_owner to pgflight_privileged: NOLOGIN,
-- no member, owner of the four SECURITY DEFINER functions that need them (_vacuum_horizon,
-- _backend_started_at, _row_triggers_off, _row_triggers_on), EXECUTE on which is granted to
-- pgflight_owner only (the engine's own functions), and to the lanes only for _vacuum_horizon
-- (engine_health's numbers). Only a superuser may grant either privilege: another deployer gets a
-- notice, and the functions stay the owner's (without the privileges: the horizon shows the
-- owner's own sessions and the bulk writes keep their checks, as before).
begin;

do $$
declare
  v_fn text;
begin
  if not coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = current_user), false) then
    raise notice 'not a superuser: pgflight_privileged not set up; engine_health sees only the owner''s sessions';
    return;
  end if;
  if not exists (select from pg_catalog.pg_roles r where r.rolname = 'pgflight_privileged') then
    create role pgflight_privileged nologin;
  end if;
  comment on role pgflight_privileged is
    'pgflight: owns the definer functions that read other backends'' statistics or set session_replication_role; no login';
  grant pg_read_all_stats to pgflight_privileged;
  revoke pg_read_all_stats from pgflight_owner;
  if pg_catalog.current_setting('server_version_num')::integer >= 150000 then
    execute 'grant set on parameter session_replication_role to pgflight_privileged';
    execute 'revoke set on parameter session_replication_role from pgflight_owner';
  end if;
  foreach v_fn in array array['pgflight._vacuum_horizon()', 'pgflight._backend_started_at(integer)',
                              'pgflight._row_triggers_off()', 'pgflight._row_triggers_on(text)'] loop
    execute format('alter function %s owner to pgflight_privileged', v_fn);
  end loop;
  -- the new owner takes the old one's place in each ACL: EXECUTE for pgflight_owner is granted
  -- again (the engine's functions call these), never to public
  revoke all on function pgflight._row_triggers_off() from public;
  grant execute on function pgflight._row_triggers_off() to pgflight_owner;
  grant execute on function pgflight._backend_started_at(integer) to pgflight_owner;
  grant execute on function pgflight._row_triggers_on(text) to pgflight_owner;
  grant execute on function pgflight._vacuum_horizon() to pgflight_owner;
end
$$;

commit;
