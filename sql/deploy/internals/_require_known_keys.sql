-- Deploy pgflight:internals/_require_known_keys

begin;

set local role pgflight_owner;

-- Refuse an options value that is not an object or has a key outside p_allowed.
CREATE OR REPLACE FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = 'options must be a JSON object',
      detail = format('got %s', coalesce(jsonb_typeof(p_options), 'NULL')),
      hint = format('Pass an object with some of: %s.', array_to_string(p_allowed, ', '));
  end if;
  select k into v_key from jsonb_object_keys(p_options) k where k <> all (p_allowed) order by k limit 1;
  if v_key is not null then
    raise exception using errcode = '22023', message = format('unknown option %s', v_key),
      detail = format('options: %s', p_options),
      hint = format('Known options: %s.', array_to_string(p_allowed, ', '));
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) IS 'Internal: 22023 unless p_options is an object whose keys are all in p_allowed.';

REVOKE ALL ON FUNCTION pgflight._require_known_keys(p_options jsonb, p_allowed text[]) FROM PUBLIC;

commit;
