-- Deploy pgflight:internals/_cron_parse

begin;

set local role pgflight_owner;

-- Parse a cron expression into the allowed values of each field. any_day / any_weekday: the day
-- field was * (or ?), for the Vixie rule on the two day fields. 22023 when malformed.
CREATE OR REPLACE FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) IS 'Internal: parse a 5- or 6-field cron expression into allowed-value sets; 22023 when malformed.';

REVOKE ALL ON FUNCTION pgflight._cron_parse(p_expr text, OUT seconds integer[], OUT minutes integer[], OUT hours integer[], OUT days integer[], OUT months integer[], OUT weekdays integer[], OUT any_day boolean, OUT any_weekday boolean) FROM PUBLIC;

commit;
