-- Revert pgflight:internals/_require_cap
begin;
set local role pgflight_owner;
drop function pgflight._require_cap(text, double precision, double precision, text);
commit;
