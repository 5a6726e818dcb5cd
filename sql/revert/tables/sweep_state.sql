-- Revert pgflight:tables/sweep_state
begin;
set local role pgflight_owner;
drop table pgflight.sweep_state;
commit;
