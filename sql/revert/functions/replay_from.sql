-- Revert pgflight:functions/replay_from
begin;
set local role pgflight_owner;
drop function pgflight.replay_from(bigint, text, text);
commit;
