-- Verify pgflight:functions/dead_letter_page
select 'pgflight.dead_letter_page(bigint, integer)'::regprocedure;
