-- Verify pgflight:tables/runs_fillfactor_80
select 1 / (case when 'fillfactor=80' = any (c.reloptions) then 1 else 0 end)
  from pg_class c where c.oid = 'pgflight.runs'::regclass;
