-- Deploy pgflight:internals/_cron
-- Defines: _cron_field(), _cron_parse(), _cron_next().
-- Cron expressions for recurring runs (issue 15), evaluated in SQL because the engine's own sweep
-- fires schedules. An expression is parsed once, when the schedule is written, into the sets of
-- allowed values of each field (stored on the schedule row); the next firing is then found field
-- by field (month, day, hour, minute, second), never by scanning minute after minute.
--
-- Syntax: five fields "minute hour day-of-month month day-of-week", or six with seconds first
-- "second minute hour day-of-month month day-of-week". Each field: *, a value, a range a-b, a
-- list a,b,c, and steps */n, a/n, a-b/n; ? means * in the two day fields; months JAN-DEC and
-- weekdays SUN-SAT by name (0 and 7 are Sunday). Aliases @yearly, @annually, @monthly, @weekly,
-- @daily, @midnight, @hourly. As in Vixie cron, when both day fields are restricted a day matches
-- either; when one is *, the other decides.
--
-- Time zones and daylight saving: fields are read on the wall clock of the schedule's zone. A
-- wall-clock time that occurs twice (clocks go back) fires once, at its first occurrence; a
-- wall-clock time that does not exist (clocks go forward) fires at the instant PostgreSQL gives
-- that reading (one hour later for a one-hour jump). Firings are strictly increasing instants.
begin;
set local role pgflight_owner;

-- The allowed values of one field, sorted. p_names (optional) are the names of values p_min ..;
-- p_what names the field in errors (22023).
create or replace function pgflight._cron_field(p_text text, p_min integer, p_max integer, p_names text[], p_what text)
returns integer[]
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
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
$$;
comment on function pgflight._cron_field(text, integer, integer, text[], text) is
  'Internal: the sorted allowed values of one cron field; 22023 naming the field when malformed.';

-- Parse a cron expression into the allowed values of each field. any_day / any_weekday: the day
-- field was * (or ?), for the Vixie rule on the two day fields. 22023 when malformed.
create or replace function pgflight._cron_parse(
  p_expr text,
  out seconds integer[], out minutes integer[], out hours integer[], out days integer[],
  out months integer[], out weekdays integer[], out any_day boolean, out any_weekday boolean)
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_expr text := lower(btrim(coalesce(p_expr, '')));
  v_f text[];
begin
  v_expr := case v_expr
    when '@yearly' then '0 0 1 1 *' when '@annually' then '0 0 1 1 *' when '@monthly' then '0 0 1 * *'
    when '@weekly' then '0 0 * * 0' when '@daily' then '0 0 * * *' when '@midnight' then '0 0 * * *'
    when '@hourly' then '0 * * * *' else v_expr end;
  v_f := regexp_split_to_array(v_expr, '\s+');
  if length(v_expr) > 500 or cardinality(v_f) not in (5, 6) then
    raise exception using errcode = '22023', message = format('cron expression %L needs 5 or 6 fields', p_expr),
      hint = '"minute hour day-of-month month day-of-week", or with seconds first; e.g. "*/15 * * * *" or "0 30 9 * * MON-FRI".';
  end if;
  if cardinality(v_f) = 5 then
    v_f := '0'::text || v_f;
  end if;
  seconds := pgflight._cron_field(v_f[1], 0, 59, null, 'second');
  minutes := pgflight._cron_field(v_f[2], 0, 59, null, 'minute');
  hours := pgflight._cron_field(v_f[3], 0, 23, null, 'hour');
  days := pgflight._cron_field(v_f[4], 1, 31, null, 'day-of-month');
  months := pgflight._cron_field(v_f[5], 1, 12,
              array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], 'month');
  weekdays := pgflight._cron_field(v_f[6], 0, 7, array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], 'day-of-week');
  any_day := v_f[4] in ('*', '?');
  any_weekday := v_f[6] in ('*', '?');
end
$$;
comment on function pgflight._cron_parse(text) is
  'Internal: parse a 5- or 6-field cron expression into allowed-value sets; 22023 when malformed.';

-- The first instant strictly after p_after that the fields allow, on the wall clock of p_tz.
-- Field by field: a month not allowed jumps to the next allowed month, a day to the next day, an
-- hour to the next allowed hour, and so on; each jump resets the smaller fields. Null when
-- nothing matches within ten years (e.g. 30 February).
create or replace function pgflight._cron_next(
  p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[],
  p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamptz)
returns timestamptz
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_t timestamp := date_trunc('second', p_after at time zone p_tz) + interval '1 second';
  v_end timestamp := v_t + interval '10 years';
  v_next integer;
  v_day_ok boolean;
  v_at timestamptz;
begin
  while v_t < v_end loop
    -- month
    if not extract(month from v_t)::integer = any (p_months) then
      v_next := (select min(m) from unnest(p_months) m where m > extract(month from v_t));
      v_t := case when v_next is null
                  then make_timestamp(extract(year from v_t)::integer + 1, p_months[1], 1, 0, 0, 0)
                  else make_timestamp(extract(year from v_t)::integer, v_next, 1, 0, 0, 0) end;
      continue;
    end if;
    -- day: day of month and weekday, Vixie's rule when both are restricted
    v_day_ok := case
      when p_any_day and p_any_weekday then true
      when p_any_day then extract(dow from v_t)::integer = any (p_weekdays)
      when p_any_weekday then extract(day from v_t)::integer = any (p_days)
      else extract(day from v_t)::integer = any (p_days) or extract(dow from v_t)::integer = any (p_weekdays) end;
    if not v_day_ok then
      v_t := date_trunc('day', v_t) + interval '1 day';
      continue;
    end if;
    -- hour
    if not extract(hour from v_t)::integer = any (p_hours) then
      v_next := (select min(h) from unnest(p_hours) h where h > extract(hour from v_t));
      v_t := case when v_next is null then date_trunc('day', v_t) + interval '1 day'
                  else date_trunc('day', v_t) + make_interval(hours => v_next) end;
      continue;
    end if;
    -- minute
    if not extract(minute from v_t)::integer = any (p_minutes) then
      v_next := (select min(m) from unnest(p_minutes) m where m > extract(minute from v_t));
      v_t := case when v_next is null then date_trunc('hour', v_t) + interval '1 hour'
                  else date_trunc('hour', v_t) + make_interval(mins => v_next) end;
      continue;
    end if;
    -- second
    if not floor(extract(second from v_t))::integer = any (p_seconds) then
      v_next := (select min(s) from unnest(p_seconds) s where s > floor(extract(second from v_t)));
      v_t := case when v_next is null then date_trunc('minute', v_t) + interval '1 minute'
                  else date_trunc('minute', v_t) + make_interval(secs => v_next) end;
      continue;
    end if;
    -- a wall-clock match. PostgreSQL reads a wall-clock time that happens twice (clocks going
    -- back) as its second occurrence: take the first, and a time whose first occurrence is not
    -- after p_after has happened already, so the repeated hour never fires twice
    v_at := v_t at time zone p_tz;
    if (v_at - interval '1 hour') at time zone p_tz = v_t then
      v_at := v_at - interval '1 hour';
    elsif (v_at - interval '30 minutes') at time zone p_tz = v_t then
      v_at := v_at - interval '30 minutes';
    end if;
    if v_at > p_after then
      return v_at;
    end if;
    v_t := v_t + interval '1 second';
  end loop;
  return null;
end
$$;
comment on function pgflight._cron_next(integer[], integer[], integer[], integer[], integer[], integer[], boolean, boolean, text, timestamptz) is
  'Internal: the first instant after p_after that a parsed cron expression allows, on p_tz''s wall clock; null if none within ten years.';

commit;
