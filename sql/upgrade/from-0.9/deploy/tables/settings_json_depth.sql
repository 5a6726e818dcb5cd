-- Deploy pgflight:tables/settings_json_depth
-- requires: tables/settings_caps
-- The cap of how deep arrays and objects may nest in a JSON value the API accepts (docs/security.md#caps):
-- a value nested deeper (a 5,000-deep array is 10 kB, under every size cap) is refused with ZF005
-- naming the column and nothing is written, so no client that reads it back (a worker decoding
-- its claims, a dashboard rendering a result) has to survive it.
begin;
set local role pgflight_owner;

alter table pgflight.settings
  add column max_json_depth integer not null default 64,
  add constraint max_json_depth_is_positive check (max_json_depth > 0);

comment on column pgflight.settings.max_json_depth is
  'Cap of how deep arrays and objects nest in a JSON value the API accepts (a scalar is 0, [1] is 1, {"a": [1]} is 2).';

commit;
