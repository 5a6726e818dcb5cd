-- Revert pgflight:tables/step_attempts_hot
begin;
set local role pgflight_owner;
alter table pgflight.step_attempts reset (fillfactor);
create index step_attempts_expiring_idx on pgflight.step_attempts (lease_expires_at)
  where status in ('claimed', 'running', 'cancel_requested');
commit;
