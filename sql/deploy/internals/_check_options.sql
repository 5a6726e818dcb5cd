-- Deploy pgflight:internals/_check_options

begin;

set local role pgflight_owner;

-- The one validator: every API function with options calls it first. NULL is '{}'; a non-object,
-- an unknown key or a value outside its spec raises 22023 naming the key. Returns the options
-- normalised (JSON nulls dropped, integers written 3.0 stored as 3), which the caller then reads
-- with plain casts: nothing read from the result can fail.
-- One query pairs every key with its spec (the inlined VALUES list, read once per call),
-- and each check is written here inline, with no function call per key; the typed readers above
-- raise the same errors, and _bad_option is called only to raise.
CREATE OR REPLACE FUNCTION pgflight._check_options(p_scope text, p_options jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v record;
  v_out jsonb := '{}';
  v_val jsonb;
  v_type text;
  v_n numeric;
  v_ts timestamptz;
  v_item jsonb;
  -- submit_run and each child of spawn_children ("spawn_children child 3") take the step options
  v_step_scope boolean := p_scope = 'submit_run' or starts_with(p_scope, 'spawn_children child');
  v_map jsonb;
  v_kind text;
  v_min numeric;
  v_max numeric;
begin
  if p_options is null or p_options = '{}' then
    return '{}';
  end if;
  v_map := pgflight._option_map();  -- a constant of this expression's cached plan
  if jsonb_typeof(p_options) <> 'object' then
    raise exception using errcode = '22023', message = format('options of %s must be a JSON object', p_scope),
      detail = format('got a JSON %s', jsonb_typeof(p_options)),
      hint = 'See docs/options.md for the keys each function takes.';
  end if;
  for v in
    select e.key, e.value,
           coalesce(v_map -> (p_scope || '.' || e.key), case when v_step_scope then v_map -> ('step.' || e.key) end) as spec
      from jsonb_each(p_options) as e(key, value)
  loop
    if v.spec is null then
      raise exception using errcode = '22023', message = format('unknown option %s for %s', v.key, p_scope),
        detail = format('known options: %s',
                        (select string_agg(s.key, ', ' order by s.key) from pgflight._option_spec() s
                          where s.scope = p_scope or (s.scope = 'step' and v_step_scope))),
        hint = 'Check the spelling; see docs/options.md.';
    end if;
    v_kind := v.spec ->> 'kind';
    v_min := (v.spec ->> 'min')::numeric;
    v_max := (v.spec ->> 'max')::numeric;
    v_val := v.value;
    v_type := jsonb_typeof(v_val);
    continue when v_type = 'null';
    case v_kind
      when 'boolean' then
        if v_type <> 'boolean' then
          perform pgflight._bad_option(p_scope, v.key, v_val, 'a JSON boolean (true or false)');
        end if;
      when 'number' then
        if (case when v_type = 'number' then v_val::numeric not between v_min and v_max else true end) then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('a JSON number from %s to %s', v_min, v_max));
        end if;
      when 'integer' then
        -- 3 and 3.0 are both 3; 1.5 is refused, never rounded
        v_n := case when v_type = 'number' then v_val::numeric end;
        if v_n is null or v_n <> trunc(v_n) or v_n not between v_min and v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('an integer from %s to %s', v_min, v_max));
        end if;
        if scale(v_n) > 0 then
          v_val := to_jsonb(v_n::bigint);
        end if;
      when 'string' then
        if v_type <> 'string' or length(v_val #>> '{}') not between v_min and v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       format('a JSON string of %s to %s characters', v_min, v_max));
        end if;
      when 'enum' then
        if v_type <> 'string' or not (v.spec -> 'choices') ? (v_val #>> '{}') then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       'one of ' || (select string_agg(c, ', ') from jsonb_array_elements_text(v.spec -> 'choices') c));
        end if;
      when 'timestamptz' then
        -- a date, a time of day (hours and minutes at least), then a UTC offset, before any cast: a
        -- date alone ("2030-01-01", whose "-01" is no offset), a timestamp without an offset, or a
        -- word such as "tomorrow" would be read in the session's TimeZone (or clock), which the
        -- client may not know; refused as _start_at refuses not_before
        v_ts := null;
        if v_type = 'string'
           and (v_val #>> '{}') ~* '^ *[0-9]{4}-[0-9]{2}-[0-9]{2}[t ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|utc|[+-][0-9]{1,2}(:?[0-9]{2}){0,2}) *$' then
          begin
            v_ts := (v_val #>> '{}')::timestamptz;
          exception when others then
            v_ts := null;
          end;
        end if;
        if v_ts is null or not isfinite(v_ts)
           or v_ts not between '1970-01-01T00:00:00Z'::timestamptz and '9999-01-01T00:00:00Z'::timestamptz then
          perform pgflight._bad_option(p_scope, v.key, v_val,
                                       'an ISO 8601 timestamp with a time of day and a UTC offset ("2030-01-01T09:00:00Z"), 1970 to 9999');
        end if;
      when 'string[]' then
        if v_type <> 'array' or jsonb_array_length(v_val) > v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val, format('a JSON array of at most %s strings', v_max));
        end if;
        for v_item in select jsonb_array_elements(v_val) loop
          if jsonb_typeof(v_item) <> 'string' or length(v_item #>> '{}') > 256 then
            perform pgflight._bad_option(p_scope, v.key, v_val, 'a JSON array of strings of at most 256 characters');
          end if;
        end loop;
      when 'backoff' then
        v_val := pgflight._check_options('backoff', v_val);
      when 'json' then
        null;  -- any JSON value: the function that takes it caps its size and depth
      when 'object' then
        -- its keys are checked by the caller (fork_agent's tool_results: tool_use ids)
        if v_type <> 'object' or (select count(*) from jsonb_object_keys(v_val)) > v_max then
          perform pgflight._bad_option(p_scope, v.key, v_val, format('a JSON object of at most %s keys', v_max));
        end if;
    end case;
    v_out := v_out || jsonb_build_object(v.key, v_val);
  end loop;
  return v_out;
end
$_$;

COMMENT ON FUNCTION pgflight._check_options(p_scope text, p_options jsonb) IS 'Internal: validate an options object against _option_spec for this scope (22023 naming the key) and return it normalised.';

REVOKE ALL ON FUNCTION pgflight._check_options(p_scope text, p_options jsonb) FROM PUBLIC;

commit;
