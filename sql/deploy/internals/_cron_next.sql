-- Deploy pgflight:internals/_cron_next

begin;

set local role pgflight_owner;

-- The first instant strictly after p_after that the fields allow, on the wall clock of p_tz.
-- Field by field: a month not allowed jumps to the next allowed month, a day to the next day, an
-- hour to the next allowed hour, and so on; each jump resets the smaller fields. Null when
-- nothing matches within ten years (e.g. 30 February).
CREATE OR REPLACE FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) IS 'Internal: the first instant after p_after that a parsed cron expression allows, on p_tz''s wall clock; null if none within ten years.';

REVOKE ALL ON FUNCTION pgflight._cron_next(p_seconds integer[], p_minutes integer[], p_hours integer[], p_days integer[], p_months integer[], p_weekdays integer[], p_any_day boolean, p_any_weekday boolean, p_tz text, p_after timestamp with time zone) FROM PUBLIC;

commit;
