-- Revert pgflight:functions/submit_runs
begin;
set local role pgflight_owner;
drop function pgflight.submit_runs(text, jsonb, jsonb);
commit;
