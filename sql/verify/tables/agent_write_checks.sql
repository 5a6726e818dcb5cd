-- Verify pgflight:tables/agent_write_checks
-- no check of the four tables is stored with an ARRAY[..] constructor or a cast to fold
select 1 / (count(*) = 0)::integer from pg_catalog.pg_constraint
 where conrelid in ('pgflight.traces'::regclass, 'pgflight.costs'::regclass, 'pgflight.agent_runs'::regclass,
                    'pgflight.budgets'::regclass)
   and contype = 'c' and (conbin::text like '%{ARRAYEXPR %' or conbin::text like '%{FUNCEXPR %');
select 1 / count(*) from pg_catalog.pg_constraint
 where conrelid = 'pgflight.costs'::regclass and conname = 'tokens_are_not_negative'
   and pg_catalog.pg_get_constraintdef(oid) like '%LEAST(%';
