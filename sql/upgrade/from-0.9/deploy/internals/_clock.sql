-- Deploy pgflight:internals/_clock
-- Defines: _fake_now(), _now().
-- The engine's clock. Every lease, backoff and deadline is computed from pgflight._now(), so a
-- test can move time without sleeping: with settings.allow_fake_clock on, a session runs
--   set pgflight.fake_now = '2030-01-01 00:00:00+00';
-- and the engine sees that instant. In production the setting is refused (ZF009), so a worker
-- cannot fake the clock to steal leases.
-- Every role may call both: _now() is inlined into the caller's query, so whoever reads a view
-- that uses it (engine_health) runs _fake_now too. _fake_now is SECURITY DEFINER because it reads
-- pgflight.settings, which no lane may read (42501 for operator and reader before). A value
-- that is not an instant is refused with 22023 (the cast's own 22007 escaped before).
begin;
set local role pgflight_owner;

create or replace function pgflight._fake_now(p_value text)
returns timestamptz
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if not (select s.allow_fake_clock from pgflight.settings s) then
    raise exception using
      errcode = 'ZF009',
      message = 'the fake clock is disabled',
      detail  = format('pgflight.fake_now is set to %L in this session', p_value),
      hint    = 'RESET pgflight.fake_now, or (tests only) UPDATE pgflight.settings SET allow_fake_clock = true.';
  end if;
  begin
    return p_value::timestamptz;
  exception when invalid_datetime_format or datetime_field_overflow or invalid_parameter_value then
    raise exception using
      errcode = '22023',
      message = 'pgflight.fake_now is not an instant',
      detail  = format('pgflight.fake_now is set to %L in this session', left(p_value, 100)),
      hint    = 'SET pgflight.fake_now to a timestamptz such as ''2030-01-01 00:00:00+00'', or RESET it.';
  end;
end
$$;
comment on function pgflight._fake_now(text) is
  'Internal: the fake instant of a test session. Raises ZF009 unless settings.allow_fake_clock, 22023 when the value is not an instant.';
grant execute on function pgflight._fake_now(text) to pgflight_worker, pgflight_operator, pgflight_reader;

-- No SET clause, fully qualified names, and volatile like the clock_timestamp() it wraps: so the
-- planner inlines it into its callers as a plain expression (a SQL function with a SET clause,
-- or a stable one that calls a volatile function, is called instead, at ~40 µs a call on the hot
-- paths). Hot paths read it once into a local.
create or replace function pgflight._now()
returns timestamptz
language sql volatile
as $$
  select case when coalesce(pg_catalog.current_setting('pgflight.fake_now', true), '') = ''
              then pg_catalog.clock_timestamp()
              else pgflight._fake_now(pg_catalog.current_setting('pgflight.fake_now', true)) end
$$;
comment on function pgflight._now() is
  'The engine clock: clock_timestamp(), or the session''s pgflight.fake_now when the fake clock is allowed.';
grant execute on function pgflight._now() to pgflight_worker, pgflight_operator, pgflight_reader;

commit;
