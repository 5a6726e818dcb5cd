-- Revert pgflight:tables/runs_fillfactor_80
begin;
set local role pgflight_owner;
alter table pgflight.runs set (fillfactor = 90);
commit;
