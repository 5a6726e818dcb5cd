-- Deploy pgflight:tuning/claim_batch_plan
-- requires: functions/claim_batch
-- claim_batch walks the ready index in claim order, whatever the statistics say.
--
-- Right after a bulk submit, before autoanalyze, the planner believes the queue holds a row or
-- two and prefers to collect every queued row through another index and sort them: measured
-- 15 ms per claim with 20,000 queued (0.5 ms with enable_sort off, 0.07 ms once vacuumed; found
-- by bench/peers). Nothing else claim_batch runs needs a sort of more than p_batch_size rows.
-- jit off: the cost penalty of that final sort would otherwise cross jit_above_cost and compile
-- every claim (300 ms measured).
--
-- A change of its own rather than an edit of functions/claim_batch, so a database deployed
-- before it gets it from `pgflight migrate`.
begin;
set local role pgflight_owner;
alter function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) set enable_sort = off;
alter function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) set jit = off;
commit;
