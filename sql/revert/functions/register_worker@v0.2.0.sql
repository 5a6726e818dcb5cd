-- Revert pgflight:functions/register_worker@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.register_worker(text, jsonb);
commit;
