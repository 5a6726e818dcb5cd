-- Deploy pgflight:internals/_backend_started_at

begin;

-- As pgflight_owner, unless the functions are pgflight_privileged's already (roles/pgflight_privileged, a superuser's
-- deploy): then the deployer, a superuser as only one could hand them over, replaces them as
-- itself and they stay pgflight_privileged's (CREATE OR REPLACE keeps the owner).
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
CREATE OR REPLACE FUNCTION pgflight._backend_started_at(p_pid integer) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select a.backend_start from pg_catalog.pg_stat_activity a where a.pid = p_pid
$$;

COMMENT ON FUNCTION pgflight._backend_started_at(p_pid integer) IS 'Internal: pg_stat_activity.backend_start of backend p_pid (null when none); owner-only.';

REVOKE ALL ON FUNCTION pgflight._backend_started_at(p_pid integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._backend_started_at(p_pid integer) TO pgflight_owner;

commit;
