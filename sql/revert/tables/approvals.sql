-- Revert pgflight:tables/approvals
begin;
set local role pgflight_owner;
drop table pgflight.approvals;
commit;
