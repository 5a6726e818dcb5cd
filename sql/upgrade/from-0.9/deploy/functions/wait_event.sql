-- Deploy pgflight:functions/wait_event
begin;
set local role pgflight_owner;

-- A running attempt waits at p_wait_key for the event p_name / p_key of its own workspace
-- (docs/waiting.md). The first call with this key records the wait; a later call with the same
-- key reads it (its timeout and default are the first call's). Returns at once (waiting = false)
-- when the wait has an outcome: 'received' with the event's payload and id, or 'timed_out' with
-- the default payload. A new wait receives the newest event of its name and key still kept
-- (emitted within settings.event_retention_s, before or after the wait started), so an event
-- emitted before anyone waits is not lost. Otherwise the attempt parks in awaiting_approval,
-- without a lease and without spending an attempt, until emit_event or the timeout (expire_waits)
-- requeues it; the recipe then runs again from the top and the same call returns the outcome.
-- options: timeout_s (seconds until the wait times out; none: it waits until an event comes),
-- default (the JSON payload a timed-out wait returns; null when not given).
-- Errors: 22023 a NULL or blank argument, a bad option, a key that names another wait of this
-- step; ZF005 a key or name longer than settings.max_name_bytes, a default over
-- settings.max_event_payload_bytes or nested deeper than settings.max_json_depth; ZF001, ZF002,
-- ZF003 (an attempt unknown or outside the login's worker lanes), ZF012.
-- Locks: the attempt, the event channel row, the wait row. emit_event takes the channel row
-- first too, so of the two, the second sees the first's rows (no lost wake-up).
create or replace function pgflight.wait_event(p_attempt_id bigint, p_token bigint, p_wait_key text,
                                               p_name text, p_key text, p_options jsonb default '{}')
returns table (outcome text, payload jsonb, event_id text, waiting boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('wait_event', p_options);  -- docs/options.md
  v_timeout double precision := pgflight._opt_number(v_opts, 'timeout_s', null, 0, 3153600000, 'wait_event');
  v_default jsonb := v_opts -> 'default';
  v_max_name integer := (select s.max_name_bytes from pgflight.settings s);
  v_att pgflight.step_attempts;
  v_wait pgflight.waits;
  v_event record;
begin
  if p_wait_key is null or btrim(p_wait_key) = '' or p_name is null or btrim(p_name) = '' or p_key is null then
    raise exception using errcode = '22023',
      message = format('wait_event refused: %s is required',
                       case when p_wait_key is null or btrim(p_wait_key) = '' then 'the wait key'
                            when p_name is null or btrim(p_name) = '' then 'the event name' else 'the event key' end),
      hint = 'Pass a wait key, an event name and an event key (the key may be empty, not null).';
  end if;
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_wait_key), 'wait key (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_name), 'event name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_max_name, octet_length(p_key), 'event key (bytes)');
  if v_default is not null then
    perform pgflight._require_cap('max_event_payload_bytes',
                                  (select s.max_event_payload_bytes from pgflight.settings s),
                                  octet_length(v_default::text), 'default payload (bytes)');
    perform pgflight._require_json_depth(v_default, 'default payload');
  end if;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'wait_event');
  perform pgflight._lock_event_channel(v_att.workspace_id, p_name, p_key);

  insert into pgflight.waits (step_id, wait_key, kind, workspace_id, event_name, event_key, due_at,
                              default_payload, requested_at)
  values (v_att.step_id, p_wait_key, 'event', v_att.workspace_id, p_name, p_key,
          v_now + make_interval(secs => v_timeout), v_default, v_now)
  on conflict on constraint waits_step_key_is_unique do nothing;
  select w.* into v_wait from pgflight.waits w
   where w.step_id = v_att.step_id and w.wait_key = p_wait_key for update;
  if v_wait.kind <> 'event' or v_wait.event_name <> p_name or v_wait.event_key <> p_key then
    raise exception using errcode = '22023',
      message = format('wait_event refused: wait key %L of this step names another wait', p_wait_key),
      detail = format('it is a %s wait%s', v_wait.kind,
                      case when v_wait.kind = 'event' then ' for another event name or key' else '' end),
      hint = 'Give each wait of a step its own key.';
  end if;
  if v_wait.outcome is null then
    -- an event emitted before the wait (or by a transaction that committed while this one waited
    -- for the channel row): the newest one still kept
    select e.event_id, e.payload into v_event from pgflight.emitted_events e
     where e.workspace_id = v_att.workspace_id and e.name = p_name and e.key = p_key and e.expires_at > v_now
     order by e.id desc limit 1;
    if found then
      perform pgflight._resolve_wait(v_wait.id, 'received', v_event.payload, v_event.event_id, 'wait_event');
      return query select 'received'::text, v_event.payload, v_event.event_id, false;
      return;
    elsif v_wait.due_at <= v_now then
      perform pgflight._resolve_wait(v_wait.id, 'timed_out', v_wait.default_payload, null, 'wait_event');
      return query select 'timed_out'::text, v_wait.default_payload, null::text, false;
      return;
    end if;
    perform pgflight._park_on_wait(v_att, v_wait);
    return query select null::text, null::jsonb, null::text, true;
    return;
  end if;
  return query select v_wait.outcome, v_wait.payload, v_wait.event_id, false;
end
$$;
comment on function pgflight.wait_event(bigint, bigint, text, text, text, jsonb) is
  'Wait for an event (name, key) of the attempt''s workspace: the outcome (received with the payload, or '
  'timed_out with the default) at once when known, else parks the attempt (waiting = true). Options: '
  'timeout_s, default. Errors: 22023, ZF001, ZF002, ZF003, ZF005, ZF012.';
grant execute on function pgflight.wait_event(bigint, bigint, text, text, text, jsonb) to pgflight_worker;

commit;
