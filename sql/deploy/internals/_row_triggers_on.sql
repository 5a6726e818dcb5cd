-- Deploy pgflight:internals/_row_triggers_on

begin;

-- As pgflight_owner, unless the functions are pgflight_privileged's already (roles/pgflight_privileged, a superuser's
-- deploy): then the deployer, a superuser as only one could hand them over, replaces them as
-- itself and they stay pgflight_privileged's (CREATE OR REPLACE keeps the owner).
do $$
begin
  if (select pg_catalog.pg_get_userbyid(p.proowner) from pg_catalog.pg_proc p
       where p.oid = pg_catalog.to_regprocedure('pgflight._row_triggers_on(text)')) is distinct from 'pgflight_privileged' then
    perform pg_catalog.set_config('role', 'pgflight_owner', true);
  end if;
end
$$;

-- Put session_replication_role back, for this transaction, to p_before: what _row_triggers_off
-- returned (origin or local). Anything else is refused (22023): it never switches to replica.
CREATE OR REPLACE FUNCTION pgflight._row_triggers_on(p_before text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight._row_triggers_on(p_before text) IS 'Internal: restore session_replication_role (origin or local) after _row_triggers_off; owner-only.';

REVOKE ALL ON FUNCTION pgflight._row_triggers_on(p_before text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._row_triggers_on(p_before text) TO pgflight_owner;

commit;
