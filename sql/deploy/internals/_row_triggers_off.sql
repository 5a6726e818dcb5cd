-- Deploy pgflight:internals/_row_triggers_off

begin;

-- As pgflight_owner, unless the functions are pgflight_privileged's already (roles/pgflight_privileged, a superuser's
-- deploy): then the deployer, a superuser as only one could hand them over, replaces them as
-- itself and they stay pgflight_privileged's (CREATE OR REPLACE keeps the owner).
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
CREATE OR REPLACE FUNCTION pgflight._row_triggers_off() RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight._row_triggers_off() IS 'Internal: session_replication_role = replica for this transaction when its owner may set it; returns the value to restore, null when not switched.';

REVOKE ALL ON FUNCTION pgflight._row_triggers_off() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._row_triggers_off() TO pgflight_owner;

commit;
