-- Revert pgflight:functions/run_list_page
begin;
drop function pgflight.run_list_page(bigint, integer, jsonb);
commit;
