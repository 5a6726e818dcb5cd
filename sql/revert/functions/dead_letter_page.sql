-- Revert pgflight:functions/dead_letter_page
begin;
set local role pgflight_owner;
drop function pgflight.dead_letter_page(bigint, integer);
commit;
