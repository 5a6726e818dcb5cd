-- Revert pgflight:functions/submit_runs@v0.4.0
begin;
set local role pgflight_owner;
drop function pgflight.submit_runs(text, jsonb, jsonb);
commit;
