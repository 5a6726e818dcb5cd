-- Revert pgflight:internals/_clock@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._now();
drop function pgflight._fake_now(text);
commit;
