-- Verify pgflight:functions/spawn_children
select 'pgflight._bad_child_options(jsonb)'::regprocedure;
select 'pgflight.spawn_children(bigint, bigint, jsonb, jsonb)'::regprocedure;
select 'pgflight.children_results(bigint)'::regprocedure;
select 'pgflight.wake_parents(integer)'::regprocedure;
