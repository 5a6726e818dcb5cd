-- Revert pgflight:functions/load_transcript
begin;
set local role pgflight_owner;
drop function pgflight.load_transcript(bigint, bigint, bigint);
commit;
