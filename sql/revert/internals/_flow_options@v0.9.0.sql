-- Revert pgflight:internals/_flow_options@v0.9.0
begin;
set local role pgflight_owner;
drop function pgflight._set_paused(text, text, boolean, text);
drop function pgflight._bad_child_flow(jsonb);
drop function pgflight._concurrency_option(jsonb);
drop function pgflight._start_at(jsonb, timestamptz);
drop function pgflight._workspace_id(text);
drop function pgflight._limit_option(jsonb, text, double precision, double precision, boolean);
drop function pgflight._require_known_keys(jsonb, text[]);
commit;
