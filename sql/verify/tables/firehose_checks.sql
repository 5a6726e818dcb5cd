-- Verify pgflight:tables/firehose_checks
-- every check of the three tables is stored without an ARRAY[..] expression
select 1 / (count(*) = 0)::integer from pg_catalog.pg_constraint
 where conrelid in ('pgflight.traces'::regclass, 'pgflight.costs'::regclass, 'pgflight.agent_runs'::regclass)
   and contype = 'c' and conbin::text like '%{ARRAYEXPR %';
select 1 / count(*) from pg_catalog.pg_constraint
 where conrelid = 'pgflight.costs'::regclass and conname = 'tokens_are_not_negative'
   and pg_catalog.pg_get_constraintdef(oid) like '%LEAST(%';
