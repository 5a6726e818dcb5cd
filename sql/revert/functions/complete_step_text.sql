-- Revert pgflight:functions/complete_step_text
begin;
set local role pgflight_owner;
drop function pgflight.complete_step_text(bigint, bigint, text);
commit;
