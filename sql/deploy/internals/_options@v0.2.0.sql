-- Deploy pgflight:internals/_options
-- Defines: _opt_num(), _opt_text(), _require_positive(), _backoff_s(), _bad_child_options().
-- Reading options from jsonb with bounds, the backoff policy, the child-options check.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- Read a numeric option: absent or JSON null gives the default; any other non-number raises 22023.
create or replace function pgflight._opt_num(p_options jsonb, p_key text, p_default double precision)
returns double precision
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a number', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON number, e.g. {"' || p_key || '": 5}.';
  end if;
  return (p_options ->> p_key)::double precision;
end
$$;
comment on function pgflight._opt_num(jsonb, text, double precision) is
  'Internal: a numeric option or its default; 22023 when the value is not a JSON number.';

create or replace function pgflight._opt_text(p_options jsonb, p_key text, p_default text)
returns text
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_options is null or p_options -> p_key is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return p_default;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'string' then
    raise exception using
      errcode = '22023',
      message = format('option %s must be a string', p_key),
      detail  = format('got %s', p_options -> p_key),
      hint    = 'Pass the option as a JSON string.';
  end if;
  return p_options ->> p_key;
end
$$;
comment on function pgflight._opt_text(jsonb, text, text) is
  'Internal: a string option or its default; 22023 when the value is not a JSON string.';

-- Raise 22023 for a missing or non-positive argument.
create or replace function pgflight._require_positive(p_name text, p_value double precision)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if p_value is null or p_value <= 0 or p_value = 'NaN'::double precision or p_value = 'Infinity'::double precision then
    raise exception using
      errcode = '22023',
      message = format('%s must be a positive number', p_name),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s greater than zero.', p_name);
  end if;
end
$$;
comment on function pgflight._require_positive(text, double precision) is
  'Internal: 22023 unless the value is a finite number above zero.';

-- Seconds to wait before retry number p_failed (1-based): exponential, capped, with jitter.
-- backoff options: base_s (default 1), factor (2), max_s (300), jitter (0.2: plus or minus 20 %).
create or replace function pgflight._backoff_s(p_failed integer, p_backoff jsonb)
returns double precision
language sql volatile
set search_path = ''
as $$
  select greatest(0, least(pgflight._opt_num(p_backoff, 'max_s', 300),
                           pgflight._opt_num(p_backoff, 'base_s', 1)
                           * power(pgflight._opt_num(p_backoff, 'factor', 2), greatest(p_failed - 1, 0)))
              * (1 + pgflight._opt_num(p_backoff, 'jitter', 0.2) * (2 * random() - 1)))
$$;
comment on function pgflight._backoff_s(integer, jsonb) is
  'Internal: retry delay in seconds, min(max_s, base_s * factor^(n-1)) times 1 +/- jitter.';

-- True when a child's options are malformed: priority not an integer, max_attempts not a
-- positive integer, lease_s or max_runtime_s not a positive number, backoff not an object.
create or replace function pgflight._bad_child_options(p_options jsonb)
returns boolean
language plpgsql immutable
set search_path = ''
as $$
declare
  v_key text;
  v_num numeric;
begin
  if p_options is null or jsonb_typeof(p_options) <> 'object' then
    return false;  -- a non-object is reported by the caller's own check
  end if;
  if p_options ? 'backoff' and jsonb_typeof(p_options -> 'backoff') <> 'object' then
    return true;
  end if;
  foreach v_key in array array['priority', 'max_attempts', 'lease_s', 'max_runtime_s'] loop
    continue when not p_options ? v_key;
    if jsonb_typeof(p_options -> v_key) <> 'number' then
      return true;
    end if;
    v_num := (p_options ->> v_key)::numeric;
    if (v_key in ('priority', 'max_attempts') and v_num <> trunc(v_num))
       or (v_key = 'max_attempts' and v_num < 1)
       or (v_key in ('lease_s', 'max_runtime_s') and v_num <= 0) then
      return true;
    end if;
  end loop;
  return false;
end
$$;
comment on function pgflight._bad_child_options(jsonb) is
  'Internal: true when a child''s options object has a malformed priority, max_attempts, lease_s, max_runtime_s or backoff.';

commit;
