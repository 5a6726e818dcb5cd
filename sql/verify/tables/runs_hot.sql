-- Verify pgflight:tables/runs_hot
select 1 / (case when 'fillfactor=90' = any (c.reloptions) then 1 else 0 end)
  from pg_class c where c.oid = 'pgflight.runs'::regclass;
