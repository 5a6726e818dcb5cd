-- Deploy pgflight:internals/_require_json_depth

begin;

set local role pgflight_owner;

-- Raise ZF005 naming settings.max_json_depth when p_value nests deeper than it; p_what names the
-- value in the message ('input', 'result', 'error', ...). The exact depth is measured only to
-- raise (DETAIL); a value too deep to measure is reported as "more than" the cap.
CREATE OR REPLACE FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_cap integer;
begin
  if p_value is null then
    return;
  end if;
  v_cap := (select s.max_json_depth from pgflight.settings s);
  -- the size bound of _json_too_deep, here too: most values end here, with no further call
  if (pg_column_size(p_value) < 8 * (v_cap + 1) and pg_column_compression(p_value) is null)
     or not pgflight._json_too_deep(p_value, v_cap) then
    return;
  end if;
  raise exception using
    errcode = 'ZF005',
    message = format('%s nests deeper than the cap settings.max_json_depth', p_what),
    detail  = format('%s nests %s levels deep (arrays and objects); settings.max_json_depth is %s',
                     p_what, coalesce(pgflight._json_depth(p_value)::text, 'more than ' || v_cap), v_cap),
    hint    = 'Send a flatter value (nesting this deep is refused so that every client can read it back), '
              'or raise the cap: UPDATE pgflight.settings SET max_json_depth = ...';
end
$$;

COMMENT ON FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) IS 'Internal: raise ZF005 naming settings.max_json_depth when the JSON value nests deeper than it.';

REVOKE ALL ON FUNCTION pgflight._require_json_depth(p_value jsonb, p_what text) FROM PUBLIC;

commit;
