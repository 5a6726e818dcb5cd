-- Revert pgflight:tables/traces
begin;
drop table pgflight.traces;
commit;
