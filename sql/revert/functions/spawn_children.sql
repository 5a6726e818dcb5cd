-- Revert pgflight:functions/spawn_children
begin;
drop function pgflight.wake_parents(integer);
drop function pgflight.children_results(bigint);
drop function pgflight.spawn_children(bigint, bigint, jsonb, jsonb);
drop function pgflight._bad_child_options(jsonb);
commit;
