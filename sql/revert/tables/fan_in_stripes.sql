-- Revert pgflight:tables/fan_in_stripes
begin;
set local role pgflight_owner;
drop table pgflight.fan_in_stripes;
commit;
