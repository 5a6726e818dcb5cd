-- Revert pgflight:tables/effects
begin;
set local role pgflight_owner;
drop table pgflight.effects;
commit;
