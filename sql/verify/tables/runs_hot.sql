-- Verify pgflight:tables/runs_hot
-- runs keeps room on its pages: a fillfactor of 90 or less (tables/runs_fillfactor_80 lowers it
-- to 80 later in the plan, so this checks the bound, not the value).
select 1 / (case when exists (select from unnest(c.reloptions) o
                               where o like 'fillfactor=%' and split_part(o, '=', 2)::int <= 90) then 1 else 0 end)
  from pg_class c where c.oid = 'pgflight.runs'::regclass;
