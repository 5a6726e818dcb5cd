-- Revert pgflight:tables/runs
begin;
set local role pgflight_owner;
drop table pgflight.runs;
commit;
