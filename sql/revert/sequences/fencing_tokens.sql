-- Revert pgflight:sequences/fencing_tokens
begin;
set local role pgflight_owner;
drop sequence pgflight.fencing_tokens;
commit;
