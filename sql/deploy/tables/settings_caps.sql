-- Deploy pgflight:tables/settings_caps
-- requires: tables/settings
-- Caps on every size and count a caller controls (issue 13; docs/security.md#caps). Over a cap
-- an API call raises ZF005 naming the column, and writes nothing.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column max_result_bytes            bigint not null default 16777216,
  add column max_error_bytes             bigint not null default 1048576,
  add column max_receipt_bytes           bigint not null default 1048576,
  add column max_approval_request_bytes  bigint not null default 1048576,
  add column max_name_bytes              integer not null default 200,
  add column max_children_per_call       integer not null default 100000,
  add column max_children_per_parent     integer not null default 1000000,
  add column max_batch_size              integer not null default 10000,
  add column max_lease_s                 double precision not null default 86400,
  add column max_live_workers_per_login  integer not null default 1000,
  add column max_stale_writes_per_attempt integer not null default 100,
  add constraint caps_are_positive check (
    max_result_bytes > 0 and max_error_bytes > 0 and max_receipt_bytes > 0
    and max_approval_request_bytes > 0 and max_name_bytes > 0 and max_children_per_call > 0
    and max_children_per_parent > 0 and max_batch_size > 0 and max_lease_s > 0
    and max_live_workers_per_login > 0 and max_stale_writes_per_attempt > 0);

comment on column pgflight.settings.max_result_bytes is 'Cap (bytes of JSON text) of a result or an agent trace block.';
comment on column pgflight.settings.max_error_bytes is 'Cap (bytes of JSON text) of fail_step''s error.';
comment on column pgflight.settings.max_receipt_bytes is 'Cap (bytes of JSON text) of record_effect''s receipt.';
comment on column pgflight.settings.max_approval_request_bytes is 'Cap (bytes of JSON text) of request_approval''s request.';
comment on column pgflight.settings.max_name_bytes is 'Cap (bytes) of worker names, recipes, step, gate and effect keys, notes.';
comment on column pgflight.settings.max_children_per_call is 'Cap of children in one spawn_children call.';
comment on column pgflight.settings.max_children_per_parent is 'Cap of children of one parent over all calls.';
comment on column pgflight.settings.max_batch_size is 'Cap of claim_batch''s batch size.';
comment on column pgflight.settings.max_lease_s is 'Cap (seconds) of a lease.';
comment on column pgflight.settings.max_live_workers_per_login is 'Cap of registered, not deregistered workers of one login.';
comment on column pgflight.settings.max_stale_writes_per_attempt is 'Cap of stale_result_rejected events of one attempt.';

commit;
