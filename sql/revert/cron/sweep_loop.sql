-- Revert pgflight:cron/sweep_loop: restores the previous definition, deploy/cron/sweep_loop@v0.9.0.sql (written by scripts/gen_sql_scripts.py)
-- Installing the sweeps under pg_cron. Runs with the caller's rights (scheduling needs pg_cron's
-- own privileges, which pgflight_owner does not have); jobs run as the role that installed them.
begin;
set local role pgflight_owner;
drop function pgflight._sweep_loop_lease(boolean);

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
-- One loop at a time: the loop holds a session advisory lock (key below) while it sweeps. A loop
-- started while another still runs (the next minute's call, a second installation, a CALL by
-- hand) waits for it, polling every 0.2 s, and takes over when it ends, so two loops never sweep
-- together; if the other does not end before this one's own end, this one returns without
-- sweeping.
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
create or replace procedure pgflight.sweep_loop(p_duration_s double precision default 55, p_interval_s double precision default 5)
language plpgsql
as $$
declare
  c_lock constant bigint := 7383617326517504001;  -- 'pgflight.sweep_loop'
  v_start timestamptz := pg_catalog.clock_timestamp();
  v_end timestamptz := v_start + pg_catalog.make_interval(secs => p_duration_s);
  v_beat timestamptz;
  v_backlog boolean;
  v_batch integer;
  v_state text;
  v_msg text;
begin
  while not pg_catalog.pg_try_advisory_lock(c_lock) loop
    if pg_catalog.clock_timestamp() > v_end then
      raise warning 'pgflight.sweep_loop: another sweep loop held the lock for % s; not sweeping', p_duration_s;
      return;
    end if;
    perform pg_catalog.pg_sleep(0.2);
  end loop;
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
  perform pg_catalog.pg_advisory_unlock(c_lock);
end
$$;
comment on procedure pgflight.sweep_loop(double precision, double precision) is
  'Sweep every p_interval_s seconds (a fixed beat) for p_duration_s seconds, one loop at a time, committing '
  'after each pass; a failing pass warns and the loop goes on (pg_cron 1.4: sweep_loop(60, 5) each minute).';
-- Issue 13: pg_cron runs it as pgflight_cron, never as a superuser; nobody else needs it.
revoke execute on procedure pgflight.sweep_loop(double precision, double precision) from public;
grant execute on procedure pgflight.sweep_loop(double precision, double precision) to pgflight_cron;

commit;
