-- Verify pgflight:tables/settings_caps
select max_result_bytes, max_error_bytes, max_receipt_bytes, max_approval_request_bytes, max_name_bytes,
       max_children_per_call, max_children_per_parent, max_batch_size, max_lease_s,
       max_live_workers_per_login, max_stale_writes_per_attempt
  from pgflight.settings where false;
