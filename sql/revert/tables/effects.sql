-- Revert pgflight:tables/effects
begin;
drop table pgflight.effects;
commit;
