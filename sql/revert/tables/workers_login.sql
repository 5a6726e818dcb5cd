-- Revert pgflight:tables/workers_login
begin;
set local role pgflight_owner;

alter table pgflight.workers drop column login;

commit;
