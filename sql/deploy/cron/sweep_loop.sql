-- Deploy pgflight:cron/sweep_loop

begin;

set local role pgflight_owner;

CREATE OR REPLACE PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision DEFAULT 55, IN p_interval_s double precision DEFAULT 5)
    LANGUAGE plpgsql
    AS $$
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

COMMENT ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) IS 'Sweep every p_interval_s seconds (a fixed beat) for p_duration_s seconds, one loop at a time, committing after each pass; a failing pass warns and the loop goes on (pg_cron 1.4: sweep_loop(60, 5) each minute).';

REVOKE ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) FROM PUBLIC;
GRANT ALL ON PROCEDURE pgflight.sweep_loop(IN p_duration_s double precision, IN p_interval_s double precision) TO pgflight_cron;

commit;
