-- Revert pgflight:internals/_check_options
begin;
set local role pgflight_owner;
drop function pgflight._check_options(text, jsonb);
commit;
