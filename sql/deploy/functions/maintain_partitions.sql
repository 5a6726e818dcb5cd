-- Deploy pgflight:functions/maintain_partitions

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight.maintain_partitions(p_limit integer DEFAULT 10000) RETURNS TABLE(partition_name text, action text, moved_rows bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
  v_workers_keep double precision;
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

  -- 4-5. traces and costs by agent run ids; streams and stream_chunks by run ids (tables/streams,
  -- absent until that change is deployed)
  return query select * from pgflight._maintain_id_partitions(array['traces', 'costs'], 'agent_runs',
                                                               (select s.agent_runs_per_partition from pgflight.settings s),
                                                               p_limit);
  if to_regclass('pgflight.stream_chunks') is not null then
    return query select * from pgflight._maintain_id_partitions(
      array['streams', 'stream_chunks'], 'runs',
      (select (to_jsonb(s) ->> 'runs_per_stream_partition')::bigint from pgflight.settings s), p_limit);
  end if;

  -- 6. stopped workers past settings.workers_keep_s, bounded. A worker that still holds a lease
  -- (deregister_worker releases them, so none should) is kept. Nothing refers to a worker by a
  -- foreign key: attempts and events keep its id as a plain number, and every read joins it
  -- with a LEFT JOIN or a probe that a missing worker fails (a fenced write: the attempt is
  -- finished or released by then).
  select s.workers_keep_s into v_workers_keep from pgflight.settings s;
  delete from pgflight.workers w
   where w.id = any (array(
           select k.id from pgflight.workers k
            where k.stopped_at < v_now - make_interval(secs => v_workers_keep)
              and k.id <> all (array(select distinct a.worker_id from pgflight.step_attempts a
                                      where a.status in ('claimed', 'running', 'cancel_requested')
                                        and a.worker_id is not null))
            limit p_limit));
  get diagnostics v_rows = row_count;
  if v_rows > 0 then
    return query select 'workers'::text, 'purged'::text, v_rows;
  end if;

  update pgflight.sweep_state set last_partitions_at = v_now;
end
$_$;

COMMENT ON FUNCTION pgflight.maintain_partitions(p_limit integer) IS 'Sweep: create the events day partitions ahead (settings.partitions_ahead_days), drop those past settings.events_keep_s, purge at most p_limit stray rows of events_default; create the traces/costs partitions ahead (settings.agent_runs_per_partition agent run ids each), drop those whose agent runs are all purged, purge at most p_limit stray rows of their default partitions; delete at most p_limit workers stopped more than settings.workers_keep_s ago; one row per action.';

REVOKE ALL ON FUNCTION pgflight.maintain_partitions(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.maintain_partitions(p_limit integer) TO pgflight_operator;

commit;
