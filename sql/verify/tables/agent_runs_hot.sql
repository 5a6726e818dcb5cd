-- Verify pgflight:tables/agent_runs_hot
select 1 / count(*) from pg_catalog.pg_class
 where oid = 'pgflight.agent_runs'::regclass and 'fillfactor=80' = any (reloptions);
