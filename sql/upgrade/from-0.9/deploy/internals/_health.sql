-- Deploy pgflight:internals/_health
-- Defines: _vacuum_horizon().
-- What engine_health reads about the server (issue 18). pg_stat_activity shows another role's
-- backend_xmin and xact_start only to a member of pg_read_all_stats, and a view's function calls
-- run as the reader, so this is SECURITY DEFINER. Its owner holds pg_read_all_stats: the first
-- instance of this change granted it to pgflight_owner; roles/pgflight_privileged moves both the
-- grant and this function to pgflight_privileged (NOLOGIN, no member), so the deploy login (a
-- member of pgflight_owner) inherits no cluster-wide statistics. Granted to the operator and
-- reader lanes through the view only: it returns numbers, never a query text or a user name.
begin;

-- As pgflight_owner, unless the function is pgflight_privileged's (roles/pgflight_privileged, a
-- superuser's deploy): then the deployer, a superuser as only one could hand it over, replaces
-- it as itself and it stays pgflight_privileged's (CREATE OR REPLACE keeps the owner; as
-- pgflight_owner this failed with "must be owner").
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
create or replace function pgflight._vacuum_horizon()
returns table (xmin_age integer, held_s double precision, pid integer)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._vacuum_horizon() is
  'Internal: the oldest xmin holding back vacuum (backend, prepared transaction or slot): its age, how long '
  'it has been held (s), the backend pid.';
grant execute on function pgflight._vacuum_horizon() to pgflight_operator, pgflight_reader;

commit;
