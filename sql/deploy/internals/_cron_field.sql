-- Deploy pgflight:internals/_cron_field

begin;

set local role pgflight_owner;

-- The allowed values of one field, sorted. p_names (optional) are the names of values p_min ..;
-- p_what names the field in errors (22023).
CREATE OR REPLACE FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) RETURNS integer[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_item text;
  v_range text;
  v_step integer;
  v_lo integer;
  v_hi integer;
  v_out integer[] := '{}';
  v_parts text[];
begin
  foreach v_item in array string_to_array(lower(p_text), ',') loop
    v_parts := string_to_array(v_item, '/');
    if cardinality(v_parts) > 2 or v_item = '' then
      raise exception using errcode = '22023', message = format('cron %s field %L is malformed', p_what, p_text),
        hint = 'Use *, a value, a range a-b, a list a,b and steps */n or a-b/n.';
    end if;
    v_range := v_parts[1];
    v_step := 1;
    if cardinality(v_parts) = 2 then
      if v_parts[2] !~ '^[0-9]{1,4}$' or v_parts[2]::integer = 0 then
        raise exception using errcode = '22023', message = format('cron %s field %L has a bad step', p_what, p_text),
          hint = 'A step is a positive whole number, e.g. */15.';
      end if;
      v_step := v_parts[2]::integer;
    end if;
    if v_range in ('*', '?') then
      v_lo := p_min;
      v_hi := p_max;
    else
      v_parts := string_to_array(v_range, '-');
      if cardinality(v_parts) > 2 then
        raise exception using errcode = '22023', message = format('cron %s field %L is malformed', p_what, p_text);
      end if;
      for i in 1 .. cardinality(v_parts) loop
        if v_parts[i] ~ '^[0-9]{1,4}$' then
          v_parts[i] := v_parts[i]::integer::text;
        elsif p_names is not null and array_position(p_names, v_parts[i]) is not null then
          v_parts[i] := (array_position(p_names, v_parts[i]) - 1 + p_min)::text;
        else
          raise exception using errcode = '22023',
            message = format('cron %s field %L: %L is not a value', p_what, p_text, v_parts[i]),
            hint = format('Values of the %s field run from %s to %s.', p_what, p_min, p_max);
        end if;
      end loop;
      v_lo := v_parts[1]::integer;
      -- a/n means a, a+n, ... up to the field's end
      v_hi := case when cardinality(v_parts) = 2 then v_parts[2]::integer
                   when cardinality(string_to_array(v_item, '/')) = 2 then p_max
                   else v_lo end;
    end if;
    -- weekday 7 is Sunday too
    if p_what = 'day-of-week' and v_hi = 7 and v_lo <= 7 then
      v_out := v_out || 0;
      v_hi := 6;
      if v_lo = 7 then
        continue;
      end if;
    end if;
    if v_lo < p_min or v_hi > p_max or v_lo > v_hi then
      raise exception using errcode = '22023',
        message = format('cron %s field %L is out of range', p_what, p_text),
        hint = format('Values of the %s field run from %s to %s, low before high.', p_what, p_min, p_max);
    end if;
    v_out := v_out || array(select generate_series(v_lo, v_hi, v_step));
  end loop;
  return array(select distinct x from unnest(v_out) x order by x);
end
$_$;

COMMENT ON FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) IS 'Internal: the sorted allowed values of one cron field; 22023 naming the field when malformed.';

REVOKE ALL ON FUNCTION pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text) FROM PUBLIC;

commit;
