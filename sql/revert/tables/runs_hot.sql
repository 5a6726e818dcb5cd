-- Revert pgflight:tables/runs_hot
begin;
set local role pgflight_owner;
alter table pgflight.runs reset (fillfactor);
commit;
