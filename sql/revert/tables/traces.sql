-- Revert pgflight:tables/traces
begin;
set local role pgflight_owner;
drop table pgflight.traces;
commit;
