-- Revert pgflight:internals/_fail_attempt
begin;
set local role pgflight_owner;
drop function pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text);
commit;
