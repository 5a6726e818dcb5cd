-- Revert pgflight:functions/fail_step_text
begin;
set local role pgflight_owner;
drop function pgflight.fail_step_text(bigint, bigint, text, jsonb);
commit;
