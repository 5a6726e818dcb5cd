-- Revert pgflight:functions/children_results
begin;
set local role pgflight_owner;
drop function pgflight.children_results(bigint);
commit;
