-- Revert pgflight:functions/register_worker
begin;
drop function pgflight.deregister_worker(bigint);
drop function pgflight.register_worker(text, jsonb);
commit;
