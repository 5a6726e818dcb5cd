-- Deploy pgflight:internals/_option_map

begin;

set local role pgflight_owner;

-- The catalogue as one jsonb object, "scope.key" -> {"kind", "min", "max", "choices"}, for the
-- validator. Immutable without arguments: a caller's cached plan folds the call into a
-- constant, so the catalogue is built once per session and each key is one lookup. Before,
-- _check_options ran _option_spec's VALUES list once per key (a SQL function with a SET clause is
-- planned anew at every call): 80 % of submit_run's time with options.
CREATE OR REPLACE FUNCTION pgflight._option_map() RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_object_agg(s.scope || '.' || s.key,
                          jsonb_build_object('kind', s.kind, 'min', s.min_value, 'max', s.max_value,
                                             'choices', s.choices))
    from pgflight._option_spec() s
$$;

COMMENT ON FUNCTION pgflight._option_map() IS 'Internal: _option_spec as one jsonb object keyed "scope.key", folded into a constant by its callers'' plans.';

REVOKE ALL ON FUNCTION pgflight._option_map() FROM PUBLIC;

commit;
