-- Revert pgflight:functions/run_list_page
begin;
set local role pgflight_owner;
drop function pgflight.run_list_page(bigint, integer, jsonb);
commit;
