-- Verify pgflight:functions/_lifecycle
select 'pgflight._wake(bigint, text, text)'::regprocedure;
select 'pgflight._cancel_steps(bigint[], text, text)'::regprocedure;
select 'pgflight._cancel_tree(bigint, bigint, text, text)'::regprocedure;
select 'pgflight._tree_steps(bigint, bigint)'::regprocedure;
select 'pgflight._step_finished(bigint, text, text)'::regprocedure;
select 'pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text)'::regprocedure;
select 'pgflight._reclaim(timestamptz, integer)'::regprocedure;
