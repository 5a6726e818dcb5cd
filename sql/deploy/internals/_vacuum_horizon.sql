-- Deploy pgflight:internals/_vacuum_horizon

begin;

-- As pgflight_owner, unless the functions are pgflight_privileged's already (roles/pgflight_privileged, a superuser's
-- deploy): then the deployer, a superuser as only one could hand them over, replaces them as
-- itself and they stay pgflight_privileged's (CREATE OR REPLACE keeps the owner).
do $$
begin
  if (select pg_catalog.pg_get_userbyid(p.proowner) from pg_catalog.pg_proc p
       where p.oid = pg_catalog.to_regprocedure('pgflight._vacuum_horizon()')) is distinct from 'pgflight_privileged' then
    perform pg_catalog.set_config('role', 'pgflight_owner', true);
  end if;
end
$$;

-- The oldest snapshot holding back vacuum in the cluster: a backend's xmin (an open transaction or
-- snapshot, e.g. a client that left a REPEATABLE READ transaction open), a prepared transaction or
-- a replication slot. xmin_age in transactions (age()), held_s how long the backend's transaction
-- has been open (null for a slot), pid the backend (null for a slot or prepared transaction).
CREATE OR REPLACE FUNCTION pgflight._vacuum_horizon() RETURNS TABLE(xmin_age integer, held_s double precision, pid integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select h.xmin_age, h.held_s, h.pid from (
    select age(a.backend_xmin) as xmin_age,
           extract(epoch from clock_timestamp() - a.xact_start)::double precision as held_s, a.pid
      from pg_stat_activity a
     where a.backend_xmin is not null and a.pid <> pg_backend_pid()
    union all
    select age(p.transaction), extract(epoch from clock_timestamp() - p.prepared)::double precision, null
      from pg_prepared_xacts p
    union all
    select greatest(age(s.xmin), age(s.catalog_xmin)), null, null
      from pg_replication_slots s
     where s.xmin is not null or s.catalog_xmin is not null
  ) h
  order by h.xmin_age desc nulls last
  limit 1
$$;

COMMENT ON FUNCTION pgflight._vacuum_horizon() IS 'Internal: the oldest xmin holding back vacuum (backend, prepared transaction or slot): its age, how long it has been held (s), the backend pid.';

REVOKE ALL ON FUNCTION pgflight._vacuum_horizon() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight._vacuum_horizon() TO pgflight_owner;

commit;
