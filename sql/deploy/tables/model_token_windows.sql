-- Deploy pgflight:tables/model_token_windows
-- requires: tables/workspaces
-- The rolling minute of a workspace's model tokens (issue 15: model_tokens_per_min): tokens per
-- 5-second bucket, added when a model call is admitted (its estimate) and corrected when it is
-- recorded (the actual input + output tokens). Only workspaces with a model_tokens_per_min limit
-- get rows; enforce_budgets deletes buckets older than two minutes.
begin;
set local role pgflight_owner;

create table pgflight.model_token_windows (
  workspace_id  bigint not null references pgflight.workspaces (id) on delete cascade,
  bucket        timestamptz not null,
  tokens        bigint not null default 0,
  constraint model_token_window_is_unique primary key (workspace_id, bucket)
) with (fillfactor = 70);
comment on table pgflight.model_token_windows is
  'Model tokens (input + output) of a workspace per 5-second bucket (bucket: its start): the rolling '
  'minute that admission checks against workspace_limits.model_tokens_per_min. Estimates of admitted '
  'calls are added at admission and replaced by the actual tokens when the call is recorded.';

commit;
