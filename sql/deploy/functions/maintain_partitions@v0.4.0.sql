-- Deploy pgflight:functions/maintain_partitions
begin;
set local role pgflight_owner;

-- Sweep (issue 18): keep the day partitions of pgflight.events (tables/events_by_day).
--   1. today and settings.partitions_ahead_days days ahead exist (UTC days of pgflight._now()); a
--      day is created as a table of its own, filled with the rows events_default holds for it,
--      then attached, so no insert ever waits on the creation of an empty day;
--   2. every day partition whose end is older than settings.events_keep_s is detached and dropped
--      (retention without a DELETE);
--   3. rows of events_default older than that are deleted, at most p_limit per call.
-- Detaching and attaching lock the parent table briefly; each action waits at most 200 ms for its
-- lock (lock_timeout, local to the action) and is otherwise left for the next call, so the log's
-- writers are never stalled behind it for longer. Returns one row per action taken.
create or replace function pgflight.maintain_partitions(p_limit integer default 10000)
returns table (partition_name text, action text, moved_rows bigint)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_today date := (pgflight._now() at time zone 'UTC')::date;
  v_keep double precision;
  v_ahead integer;
  v_cut timestamptz;
  v_day date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_name text;
  v_rows bigint;
begin
  perform pgflight._require_lane('operator', null, 'maintain_partitions');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);
  select s.events_keep_s, s.partitions_ahead_days into v_keep, v_ahead from pgflight.settings s;
  v_cut := v_now - make_interval(secs => v_keep);

  -- 1. the days ahead
  for v_day in select d::date from generate_series(v_today, v_today + v_ahead, interval '1 day') d loop
    v_name := 'events_' || to_char(v_day, 'YYYYMMDD');
    v_lo := v_day::timestamp at time zone 'UTC';
    v_hi := (v_day + 1)::timestamp at time zone 'UTC';
    continue when to_regclass('pgflight.' || v_name) is not null or v_hi <= v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('create table pgflight.%I (like pgflight.events including defaults including constraints)', v_name);
      execute format('with m as (delete from pgflight.events_default e where e.at >= %L and e.at < %L returning e.*) '
                     'insert into pgflight.%I select * from m', v_lo, v_hi, v_name);
      get diagnostics v_rows = row_count;
      execute format('alter table pgflight.events attach partition pgflight.%I for values from (%L) to (%L)',
                     v_name, v_lo, v_hi);
      return query select v_name, 'created'::text, v_rows;
    exception when lock_not_available then
      null;  -- the next call creates it
    end;
  end loop;

  -- 2. the days past retention
  for v_name, v_hi in
    select c.relname::text, (to_date(substr(c.relname, 8), 'YYYYMMDD') + 1)::timestamp at time zone 'UTC'
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'pgflight.events'::regclass and c.relname ~ '^events_[0-9]{8}$'
     order by c.relname
  loop
    continue when v_hi > v_cut;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('alter table pgflight.events detach partition pgflight.%I', v_name);
      execute format('drop table pgflight.%I', v_name);
      return query select v_name, 'dropped'::text, null::bigint;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  -- 3. strays of the default partition past retention, bounded
  delete from pgflight.events_default e
   where e.ctid = any (array(select d.ctid from pgflight.events_default d where d.at < v_cut limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'events_default'::text, 'purged'::text, v_rows;
  end if;

  update pgflight.sweep_state set last_partitions_at = v_now;
end
$$;
comment on function pgflight.maintain_partitions(integer) is
  'Sweep: create the events day partitions ahead (settings.partitions_ahead_days), drop those past '
  'settings.events_keep_s, purge at most p_limit stray rows of events_default; one row per action.';
grant execute on function pgflight.maintain_partitions(integer) to pgflight_operator;

commit;
