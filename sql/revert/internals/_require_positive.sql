-- Revert pgflight:internals/_require_positive
begin;
set local role pgflight_owner;
drop function pgflight._require_positive(text, double precision);
commit;
