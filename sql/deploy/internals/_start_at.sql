-- Deploy pgflight:internals/_start_at

begin;

set local role pgflight_owner;

-- When a new step becomes claimable, from its options, on the server's clock:
--   delay_s     seconds from now (0 .. 1e9);
--   not_before  an ISO 8601 timestamp WITH a time of day and a UTC offset
--               ("2030-01-01T09:00:00+02:00" or "...Z"); one without an offset, or a date alone
--               ("2030-01-01", whose "-01" is no offset), would be read in the session's
--               TimeZone, which the client may not know, so it is refused.
-- Neither: p_now. Both: 22023. Errors name the key.
CREATE OR REPLACE FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_text text;
  v_delay double precision;
begin
  if p_options ? 'delay_s' and p_options ? 'not_before' then
    raise exception using errcode = '22023', message = 'options delay_s and not_before exclude each other',
      hint = 'Pass one of them.';
  end if;
  if p_options ? 'delay_s' then
    v_delay := coalesce(pgflight._limit_option(p_options, 'delay_s', 0, 1e9, false), 0);
    return p_now + make_interval(secs => v_delay);
  end if;
  if not p_options ? 'not_before' or jsonb_typeof(p_options -> 'not_before') = 'null' then
    return p_now;
  end if;
  if jsonb_typeof(p_options -> 'not_before') <> 'string' then
    raise exception using errcode = '22023', message = 'option not_before must be a string',
      detail = format('got %s', p_options -> 'not_before'),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z", or use delay_s.';
  end if;
  v_text := btrim(p_options ->> 'not_before');
  -- a date, a time of day (hours and minutes at least), then the offset: a date alone ends in
  -- "-DD", which the offset pattern alone took for an offset
  if v_text !~* '^[0-9]{4}-[0-9]{2}-[0-9]{2}[t ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)? *(z|utc|[+-][0-9]{1,2}(:?[0-9]{2}){0,2})$' then
    raise exception using errcode = '22023', message = 'option not_before needs a UTC offset and a time of day',
      detail = format('got %L', v_text),
      hint = 'Write the offset ("2030-01-01T09:00:00+02:00" or "...Z"), or use delay_s (seconds, on the server''s clock).';
  end if;
  begin
    return v_text::timestamptz;
  exception when others then
    raise exception using errcode = '22023', message = 'option not_before is not a timestamp',
      detail = format('got %L', v_text),
      hint = 'Pass an ISO 8601 timestamp with a UTC offset, e.g. "2030-01-01T09:00:00Z".';
  end;
end
$_$;

COMMENT ON FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) IS 'Internal: when a step becomes claimable from options delay_s / not_before (offset required); 22023 otherwise.';

REVOKE ALL ON FUNCTION pgflight._start_at(p_options jsonb, p_now timestamp with time zone) FROM PUBLIC;

commit;
