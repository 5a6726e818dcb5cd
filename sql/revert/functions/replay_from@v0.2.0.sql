-- Revert pgflight:functions/replay_from@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.replay_from(bigint, text, text);
commit;
