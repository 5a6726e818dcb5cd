-- Deploy pgflight:internals/_json_depth
-- requires: tables/settings_json_depth
-- Defines: _json_too_deep(), _json_depth(), _require_json_depth().
-- How deep arrays and objects nest in a JSON value, and the cap settings.max_json_depth on every
-- JSON value the API accepts (docs/security.md#caps). Depth counts containers: a scalar is 0,
-- [1] is 1, {"a": [1]} is 2. The check is one pass of the SQL/JSON path engine over the value,
-- which stops descending at the cap: a value under it costs what walking it costs, a deeper one
-- no more. Granted to no role.
begin;
set local role pgflight_owner;

-- Does p_value nest deeper than p_cap? True when an array or object sits at level p_cap (the
-- value itself is level 0): then the nesting is at least p_cap + 1. Strict mode, so that an array
-- at that level is tested as itself and not unwrapped into its elements.
-- Most values are not walked at all: a value nesting d levels takes at least 8 d bytes as jsonb (a
-- 4-byte header per container, a 4-byte entry in its parent, the 4-byte length word), so a value
-- stored in fewer than 8 (p_cap + 1) bytes, uncompressed, cannot be deeper than p_cap; both are
-- read from the datum's header. A compressed value (one read from a table) is always walked.
create or replace function pgflight._json_too_deep(p_value jsonb, p_cap integer)
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_value is null
     or (pg_column_size(p_value) < 8 * (p_cap + 1) and pg_column_compression(p_value) is null)
     or jsonb_typeof(p_value) not in ('object', 'array') then
    return false;
  end if;
  return jsonb_path_exists(
    p_value, format('strict $.**{%s} ? (@.type() == "array" || @.type() == "object")', p_cap)::jsonpath);
end
$$;
comment on function pgflight._json_too_deep(jsonb, integer) is
  'Internal: does the JSON value nest arrays and objects deeper than p_cap levels (one pass)?';

-- How deep p_value nests (0 for a scalar or NULL): doubling, then bisecting, the level
-- _json_too_deep asks about, so about 2 log2(depth) passes. For an error's DETAIL, not a hot path.
-- NULL when the value is too deep for PostgreSQL's stack to measure (54001).
create or replace function pgflight._json_depth(p_value jsonb)
returns integer
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_lo integer := 0;  -- the value nests deeper than this
  v_hi integer := 1;  -- and (once the first loop ends) not deeper than this
  v_mid integer;
begin
  if p_value is null or jsonb_typeof(p_value) not in ('object', 'array') then
    return 0;
  end if;
  begin
    while pgflight._json_too_deep(p_value, v_hi) loop
      v_lo := v_hi;
      v_hi := v_hi * 2;
    end loop;
    while v_hi - v_lo > 1 loop
      v_mid := (v_lo + v_hi) / 2;
      if pgflight._json_too_deep(p_value, v_mid) then
        v_lo := v_mid;
      else
        v_hi := v_mid;
      end if;
    end loop;
  exception when statement_too_complex then
    return null;
  end;
  return v_hi;
end
$$;
comment on function pgflight._json_depth(jsonb) is
  'Internal: how deep arrays and objects nest in a JSON value (a scalar or NULL is 0, [1] is 1).';

-- Raise ZF005 naming settings.max_json_depth when p_value nests deeper than it; p_what names the
-- value in the message ('input', 'result', 'error', ...). The exact depth is measured only to
-- raise (DETAIL); a value too deep to measure is reported as "more than" the cap.
create or replace function pgflight._require_json_depth(p_value jsonb, p_what text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._require_json_depth(jsonb, text) is
  'Internal: raise ZF005 naming settings.max_json_depth when the JSON value nests deeper than it.';

commit;
