-- Revert pgflight:tables/approvals_payload
begin;
set local role pgflight_owner;

alter table pgflight.approvals drop column payload;

commit;
