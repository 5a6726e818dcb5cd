-- Revert pgflight:tables/steps
begin;
set local role pgflight_owner;
drop table pgflight.steps;
commit;
