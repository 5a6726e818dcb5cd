-- Revert pgflight:functions/children_results@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.children_results(bigint);
commit;
