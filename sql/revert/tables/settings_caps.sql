-- Revert pgflight:tables/settings_caps
begin;
set local role pgflight_owner;

alter table pgflight.settings
  drop constraint caps_are_positive,
  drop column max_result_bytes, drop column max_error_bytes, drop column max_receipt_bytes,
  drop column max_approval_request_bytes, drop column max_name_bytes, drop column max_children_per_call,
  drop column max_children_per_parent, drop column max_batch_size, drop column max_lease_s,
  drop column max_live_workers_per_login, drop column max_stale_writes_per_attempt;

commit;
