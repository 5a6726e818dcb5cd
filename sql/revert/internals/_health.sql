-- Revert pgflight:internals/_health: restores the previous definition, deploy/internals/_health@v0.9.0.sql (written by scripts/gen_sql_scripts.py)
-- Defines: _vacuum_horizon().
-- What engine_health reads about the server (issue 18). pg_stat_activity shows another role's
-- backend_xmin and xact_start only to a member of pg_read_all_stats, and a view's function calls
-- run as the reader, so this is SECURITY DEFINER, owned by pgflight_owner, which this change makes
-- a member of pg_read_all_stats (when the installer may grant it; else a WARNING, and the horizon
-- shows only the owner's own sessions). Granted to the operator and reader lanes through the view
-- only: it returns numbers, never a query text or a user name.
begin;

do $$
begin
  grant pg_read_all_stats to pgflight_owner;
exception when insufficient_privilege then
  raise warning 'pgflight: cannot grant pg_read_all_stats to pgflight_owner; engine_health will not see other roles'' transactions';
end
$$;

set local role pgflight_owner;

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
