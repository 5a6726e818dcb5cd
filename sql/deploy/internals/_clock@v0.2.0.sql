-- Deploy pgflight:internals/_clock
-- Defines: _fake_now(), _now().
-- The engine's clock. Every lease, backoff and deadline is computed from pgflight._now(), so a
-- test can move time without sleeping: with settings.allow_fake_clock on, a session runs
--   set pgflight.fake_now = '2030-01-01 00:00:00+00';
-- and the engine sees that instant. In production the setting is refused (ZF009), so a worker
-- cannot fake the clock to steal leases.
-- None is granted to any role but _now(), which every role may read.
begin;
set local role pgflight_owner;

create or replace function pgflight._fake_now(p_value text)
returns timestamptz
language plpgsql stable
set search_path = ''
as $$
begin
  if not (select s.allow_fake_clock from pgflight.settings s) then
    raise exception using
      errcode = 'ZF009',
      message = 'the fake clock is disabled',
      detail  = format('pgflight.fake_now is set to %L in this session', p_value),
      hint    = 'RESET pgflight.fake_now, or (tests only) UPDATE pgflight.settings SET allow_fake_clock = true.';
  end if;
  return p_value::timestamptz;
end
$$;
comment on function pgflight._fake_now(text) is
  'Internal: the fake instant of a test session. Raises ZF009 unless settings.allow_fake_clock.';

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
