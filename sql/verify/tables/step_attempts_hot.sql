-- Verify pgflight:tables/step_attempts_hot
select 1 / (case when 'fillfactor=80' = any (c.reloptions) then 1 else 0 end)
  from pg_class c where c.oid = 'pgflight.step_attempts'::regclass;
select 1 / (case when to_regclass('pgflight.step_attempts_expiring_idx') is null then 1 else 0 end);
