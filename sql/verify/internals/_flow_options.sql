-- Verify pgflight:internals/_flow_options
select 'pgflight._require_known_keys(jsonb, text[])'::regprocedure;
select 'pgflight._limit_option(jsonb, text, double precision, double precision, boolean)'::regprocedure;
select 'pgflight._workspace_id(text)'::regprocedure;
select 'pgflight._start_at(jsonb, timestamptz)'::regprocedure;
select 'pgflight._concurrency_option(jsonb)'::regprocedure;
