-- Revert pgflight:internals/_bad_option
begin;
set local role pgflight_owner;
drop function pgflight._bad_option(text, text, jsonb, text);
commit;
