-- Revert pgflight:functions/register_worker
begin;
set local role pgflight_owner;
drop function pgflight.register_worker(text, jsonb);
commit;
