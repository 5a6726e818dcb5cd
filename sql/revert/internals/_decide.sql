-- Revert pgflight:internals/_decide
begin;
set local role pgflight_owner;
drop function pgflight._decide(bigint, text, text, text, text);
commit;
