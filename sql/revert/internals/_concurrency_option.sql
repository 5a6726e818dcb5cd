-- Revert pgflight:internals/_concurrency_option
begin;
set local role pgflight_owner;
drop function pgflight._concurrency_option(jsonb);
commit;
