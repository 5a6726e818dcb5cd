-- Deploy pgflight:cron/sweep_loop
-- Installing the sweeps under pg_cron. Runs with the caller's rights (scheduling needs pg_cron's
-- own privileges, which pgflight_owner does not have); jobs run as the role that installed them.
begin;
set local role pgflight_owner;

-- Run every sweep, COMMIT, sleep, for about p_duration_s seconds. pg_cron 1.4 schedules by the
-- minute only; a job that CALLs this once a minute (install_schedules: sweep_loop(60, 5)) sweeps
-- every p_interval_s seconds, so a dead worker's step is running again within lease + a few
-- seconds (invariant 4). On pg_cron >= 1.5 the job is sweep_loop(interval, interval) every interval.
--
-- Passes are on a fixed beat (start, start + interval, ...), not "interval after the last pass
-- ended": the loop's last pass is the last beat before p_duration_s, so a loop of 60 s started each
-- minute leaves no gap at the minute boundary (issue 18: sweep_loop(55, 5) left 10 s between the
-- last pass of one minute and the first of the next).
--
-- One loop at a time: the loop holds the lease row 'sweep_loop' of pgflight.engine_locks (its
-- backend's pid and start) while it sweeps (_sweep_loop_lease). A loop started while another
-- still runs (the next minute's call, a second installation, a CALL by hand) waits for it,
-- polling every 0.2 s, and takes over when it ends (or its backend is gone), so two loops never
-- sweep together; if the other does not end before this one's own end, this one returns without
-- sweeping. It was a session advisory lock on a constant key: any login could take that key and
-- hold it, and every loop then returned without sweeping while pg_cron logged success. No login
-- but the engine's own functions can write the lease row.
--
-- Each pass ends in bounded time whatever other sessions hold: the reclaim skips what is locked
-- (SKIP LOCKED on every row), and lock_timeout (pgflight.sweep_lock_timeout, default 2s) is set
-- local to the pass, so a sweep that waits for a row a client transaction keeps locked gives up
-- instead of stalling. No statement_timeout per pass: PostgreSQL (15) arms it per top-level
-- statement only, so one set inside this CALL is never armed (measured); a pass's work is bounded
-- by the sweeps' limits instead, and a statement_timeout on the CALL itself would bound the whole
-- loop.
-- A pass that raises is rolled back alone: RAISE WARNING with its SQLSTATE and message (the
-- server log, pg_cron's job_run_details), and the loop goes on at the next beat.
-- Retention runs in the loop too: after the sweeps, in a transaction of its own, each pass
-- purges up to pgflight.sweep_purge_batch (default 5000) finished runs older than
-- settings.purge_after_s (purge_finished), so retention has no hourly cap and no long
-- transaction (issue 18: 5,000 runs take the set-based purge about 0.2 s; through cascades, where
-- the owner may not set session_replication_role, about 1.3 s); a failing purge warns like a
-- failing pass. The events log is kept by
-- maintain_partitions, which run_sweeps calls once a minute.
-- While a sweep or the purge returns as many rows as its limit (a backlog, e.g. after a mass
-- crash), the next pass starts at once instead of at the next beat.
-- No SET clause: a procedure with one may not COMMIT, so every name inside is schema-qualified.
-- The sweep loop's lease (engine_locks row 'sweep_loop'): p_take true takes it for this backend
-- when it is free, already this backend's, or held by a backend that is gone (pid and start no
-- longer in pg_stat_activity); p_take false gives it back when this backend holds it. Returns
-- whether this backend holds it afterwards (take) or gave it back (release). Its own UPDATE
-- decides between two loops taking it at once (the second waits for the first's commit, which
-- sweep_loop does right after, and then sees a live holder). SECURITY DEFINER: pgflight_cron, the
-- loop's role, has no privilege on the table.
create or replace function pgflight._sweep_loop_lease(p_take boolean)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_started timestamptz;
  v_n integer;
begin
  perform pg_catalog.pg_stat_clear_snapshot();  -- pg_stat_activity as of now, not of the transaction's first read
  -- backend start times through _backend_started_at (pgflight_privileged's: another role's backend
  -- shows its start only to pg_read_all_stats, which the owner does not hold)
  v_started := pgflight._backend_started_at(pg_catalog.pg_backend_pid());
  if p_take then
    update pgflight.engine_locks l set holder_pid = pg_catalog.pg_backend_pid(), holder_started_at = v_started
     where l.scope = 'sweep_loop'
       and (l.holder_pid is null
            or (l.holder_pid = pg_catalog.pg_backend_pid() and l.holder_started_at = v_started)
            or pgflight._backend_started_at(l.holder_pid) is distinct from l.holder_started_at);
  else
    update pgflight.engine_locks l set holder_pid = null, holder_started_at = null
     where l.scope = 'sweep_loop' and l.holder_pid = pg_catalog.pg_backend_pid() and l.holder_started_at = v_started;
  end if;
  get diagnostics v_n = row_count;
  return v_n > 0;
end
$$;
comment on function pgflight._sweep_loop_lease(boolean) is
  'Internal: take (true) or give back (false) the sweep loop''s lease for this backend; returns whether it did.';
revoke execute on function pgflight._sweep_loop_lease(boolean) from public;
grant execute on function pgflight._sweep_loop_lease(boolean) to pgflight_cron;

create or replace procedure pgflight.sweep_loop(p_duration_s double precision default 55, p_interval_s double precision default 5)
language plpgsql
as $$
declare
  v_start timestamptz := pg_catalog.clock_timestamp();
  v_end timestamptz := v_start + pg_catalog.make_interval(secs => p_duration_s);
  v_beat timestamptz;
  v_backlog boolean;
  v_batch integer;
  v_state text;
  v_msg text;
begin
  loop
    -- committed at once: a second loop waiting on the row sees this one's lease, not a lock
    exit when pgflight._sweep_loop_lease(true);
    commit;
    if pg_catalog.clock_timestamp() > v_end then
      raise warning 'pgflight.sweep_loop: another sweep loop held the lease for % s; not sweeping', p_duration_s;
      return;
    end if;
    perform pg_catalog.pg_sleep(0.2);
  end loop;
  commit;
  v_beat := pg_catalog.clock_timestamp();
  loop
    v_backlog := false;
    begin
      perform pg_catalog.set_config('lock_timeout',
        coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_lock_timeout', true), ''), '2s'), true);
      select coalesce(pg_catalog.bool_or(s.affected >= 1000), false) into v_backlog
        from pgflight.run_sweeps() s;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
      raise warning 'pgflight.sweep_loop: a sweep pass failed (%): %', v_state, v_msg;
    end;
    commit;
    begin
      perform pg_catalog.set_config('lock_timeout',
        coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_lock_timeout', true), ''), '2s'), true);
      v_batch := coalesce(nullif(pg_catalog.current_setting('pgflight.sweep_purge_batch', true), ''), '5000')::integer;
      if v_batch > 0 and pgflight.purge_finished(null, v_batch) >= v_batch then
        v_backlog := true;
      end if;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
      raise warning 'pgflight.sweep_loop: a purge pass failed (%): %', v_state, v_msg;
    end;
    commit;
    -- the next beat: the first one still ahead (a long pass skips the beats it overran)
    while v_beat <= pg_catalog.clock_timestamp() loop
      v_beat := v_beat + pg_catalog.make_interval(secs => greatest(p_interval_s, 0.01));
    end loop;
    exit when pg_catalog.clock_timestamp() >= v_end or (not v_backlog and v_beat >= v_end);
    if not v_backlog then
      perform pg_catalog.pg_sleep(pg_catalog.date_part('epoch', v_beat - pg_catalog.clock_timestamp()));
    end if;
  end loop;
  perform pgflight._sweep_loop_lease(false);
  commit;
end
$$;
comment on procedure pgflight.sweep_loop(double precision, double precision) is
  'Sweep every p_interval_s seconds (a fixed beat) for p_duration_s seconds, one loop at a time, committing '
  'after each pass; a failing pass warns and the loop goes on (pg_cron 1.4: sweep_loop(60, 5) each minute).';
-- Issue 13: pg_cron runs it as pgflight_cron, never as a superuser; nobody else needs it.
revoke execute on procedure pgflight.sweep_loop(double precision, double precision) from public;
grant execute on procedure pgflight.sweep_loop(double precision, double precision) to pgflight_cron;

commit;
