-- Revert pgflight:sequences/claim_turns
begin;
set local role pgflight_owner;
drop sequence pgflight.claim_turns;
commit;
