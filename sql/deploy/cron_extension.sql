-- Deploy pgflight:cron_extension
-- requires: schema
-- pg_cron where the server allows it: the library must be in shared_preload_libraries and this
-- must be the database named by cron.database_name. Elsewhere (a test clone, a managed server
-- without pg_cron) the engine still works: claim_batch reclaims expired leases itself and the
-- sweeps can be called by any scheduler.
begin;

do $$
begin
  if exists (select from pg_catalog.pg_available_extensions where name = 'pg_cron')
     and current_setting('shared_preload_libraries', true) ~ '(^|[ ,])pg_cron($|[ ,])'
     and current_setting('cron.database_name', true) = current_database() then
    create extension if not exists pg_cron;
  else
    raise notice 'pg_cron not available in database %; sweeps must be scheduled another way', current_database();
  end if;
end
$$;

commit;
