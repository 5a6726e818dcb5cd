-- Revert pgflight:internals/_require_readable_run
begin;
set local role pgflight_owner;
drop function pgflight._require_readable_run(bigint, text);
commit;
