-- Revert pgflight:functions/_now
begin;
drop function pgflight._now();
drop function pgflight._fake_now(text);
commit;
