-- Verify pgflight:functions/run_list_page
select 'pgflight.run_list_page(bigint, integer, jsonb)'::regprocedure;
