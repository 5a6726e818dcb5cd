-- Revert pgflight:functions/load_transcript@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.load_transcript(bigint, bigint, bigint);
commit;
