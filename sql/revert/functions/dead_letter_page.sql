-- Revert pgflight:functions/dead_letter_page
begin;
drop function pgflight.dead_letter_page(bigint, integer);
commit;
