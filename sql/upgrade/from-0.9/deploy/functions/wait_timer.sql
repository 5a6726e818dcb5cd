-- Deploy pgflight:functions/wait_timer
begin;
set local role pgflight_owner;

-- A running attempt sleeps at timer p_wait_key for p_seconds (docs/waiting.md). The first call
-- with this key records the timer (due p_seconds from now; a later call with the same key keeps
-- that due time, whatever seconds it passes). Not yet due: the attempt parks in awaiting_approval,
-- gives up its lease and spends no attempt; the sweep (expire_waits) requeues it when due, and the
-- recipe, run again from the top, calls wait_timer with the same key and gets outcome 'elapsed' at
-- once (waiting = false). Due already (a re-claim, or p_seconds = 0): 'elapsed' at once.
-- Errors: 22023 a NULL, blank or negative argument, an unknown option, or a key that names an
-- event wait of this step; ZF005 a key longer than settings.max_name_bytes; ZF001 lease lost,
-- ZF002 cancelled, ZF003 unknown attempt (or outside the login's worker lanes), ZF012 another
-- login's attempt. Locks: the attempt, then the wait row (docs/locking.md).
create or replace function pgflight.wait_timer(p_attempt_id bigint, p_token bigint, p_wait_key text,
                                               p_seconds double precision, p_options jsonb default '{}')
returns table (outcome text, due_at timestamptz, waiting boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_wait pgflight.waits;
begin
  perform pgflight._check_options('wait_timer', p_options);  -- takes none: any key is 22023 naming it
  if p_wait_key is null or btrim(p_wait_key) = '' then
    raise exception using errcode = '22023', message = 'wait_timer refused: the wait key is required',
      hint = 'Name the timer within the step, e.g. ''cool-off''.';
  end if;
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_wait_key), 'wait key (bytes)');
  if p_seconds is null then
    raise exception using errcode = '22023', message = 'wait_timer refused: seconds is null',
      hint = 'Pass the seconds to sleep, 0 or more.';
  end if;
  perform pgflight._check_arg('seconds', p_seconds, 0, 3153600000);
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'wait_timer');

  insert into pgflight.waits (step_id, wait_key, kind, workspace_id, due_at, requested_at)
  values (v_att.step_id, p_wait_key, 'timer', v_att.workspace_id, v_now + make_interval(secs => p_seconds), v_now)
  on conflict on constraint waits_step_key_is_unique do nothing;
  select w.* into v_wait from pgflight.waits w
   where w.step_id = v_att.step_id and w.wait_key = p_wait_key for update;
  if v_wait.kind <> 'timer' then
    raise exception using errcode = '22023',
      message = format('wait_timer refused: wait key %L of this step is an %s wait', p_wait_key, v_wait.kind),
      hint = 'Give each wait of a step its own key.';
  end if;
  if v_wait.outcome is null and v_wait.due_at <= v_now then
    perform pgflight._resolve_wait(v_wait.id, 'elapsed', null, null, 'wait_timer');
    v_wait.outcome := 'elapsed';
  end if;
  if v_wait.outcome is not null then
    return query select v_wait.outcome, v_wait.due_at, false;
    return;
  end if;
  perform pgflight._park_on_wait(v_att, v_wait);
  return query select null::text, v_wait.due_at, true;
end
$$;
comment on function pgflight.wait_timer(bigint, bigint, text, double precision, jsonb) is
  'Sleep at a keyed timer: outcome elapsed at once when due, else parks the attempt without a lease or an '
  'attempt spent (waiting = true) until expire_waits requeues it. Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';
grant execute on function pgflight.wait_timer(bigint, bigint, text, double precision, jsonb) to pgflight_worker;

commit;
