-- Revert pgflight:internals/_fake_now
begin;
set local role pgflight_owner;
drop function pgflight._fake_now(text);
commit;
