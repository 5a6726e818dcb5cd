-- Revert pgflight:tables/settings
begin;
set local role pgflight_owner;
drop table pgflight.settings;
commit;
