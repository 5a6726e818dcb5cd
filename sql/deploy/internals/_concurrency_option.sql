-- Deploy pgflight:internals/_concurrency_option

begin;

set local role pgflight_owner;

-- The concurrency key and limit of a new step from its options: concurrency_key (a string of at
-- most 200 characters) with concurrency_limit (a whole number 1 .. 1e6, default 1). 22023 otherwise.
CREATE OR REPLACE FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if jsonb_typeof(p_options -> 'concurrency_key') is null or jsonb_typeof(p_options -> 'concurrency_key') = 'null' then
    if p_options ? 'concurrency_limit' and jsonb_typeof(p_options -> 'concurrency_limit') <> 'null' then
      raise exception using errcode = '22023', message = 'option concurrency_limit needs concurrency_key',
        hint = 'Pass concurrency_key too, e.g. {"concurrency_key": "customer-42", "concurrency_limit": 1}.';
    end if;
    return;
  end if;
  if jsonb_typeof(p_options -> 'concurrency_key') <> 'string'
     or btrim(p_options ->> 'concurrency_key') = '' or length(p_options ->> 'concurrency_key') > 200 then
    raise exception using errcode = '22023', message = 'option concurrency_key must be a non-blank string of at most 200 characters',
      detail = format('got %s', left((p_options -> 'concurrency_key')::text, 300));
  end if;
  o_key := p_options ->> 'concurrency_key';
  o_limit := coalesce(pgflight._limit_option(p_options, 'concurrency_limit', 1, 1e6, true), 1)::integer;
end
$$;

COMMENT ON FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) IS 'Internal: (concurrency_key, concurrency_limit) from a step''s options; 22023 when malformed.';

REVOKE ALL ON FUNCTION pgflight._concurrency_option(p_options jsonb, OUT o_key text, OUT o_limit integer) FROM PUBLIC;

commit;
