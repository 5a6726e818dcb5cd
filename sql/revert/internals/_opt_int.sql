-- Revert pgflight:internals/_opt_int
begin;
set local role pgflight_owner;
drop function pgflight._opt_int(jsonb, text, bigint, numeric, numeric, text);
commit;
