-- Revert pgflight:tables/runs_idempotency_partial
begin;
set local role pgflight_owner;
alter table pgflight.runs
  add constraint idempotency_key_is_unique_per_workspace unique (workspace_id, idempotency_key);
drop index pgflight.idempotency_key_is_unique_per_workspace_idx;
commit;
