-- Deploy pgflight:functions/emit_event
begin;
set local role pgflight_owner;

-- Emit event p_name / p_key with p_payload in workspace p_workspace (docs/waiting.md). Called by
-- an operator of the workspace or by a worker login of it (a recipe that signals another run).
-- In this transaction it records the event and resolves every pending wait for that name and key
-- ('received', with the payload and the event id), requeuing each step parked on one. The event
-- is kept for settings.event_retention_s: a wait that starts later receives it at once.
-- Idempotent by event id (options.event_id; a fresh id when not given): the same id again, with
-- the same name, key and payload, while the first is kept, changes nothing (emitted = false,
-- woken = 0); the same id with another name, key or payload is ZF004.
-- A wait's outcome is recorded once: a wait resolved by an earlier event, or timed out, keeps its
-- outcome, and a later event is only kept for the waits that start afterwards.
-- options: event_id (1 to 200 characters).
-- Errors: 22023 a NULL or blank argument, a bad option; ZF003 an unknown workspace or one the
-- login may neither operate nor work in (the same answer); ZF004 the event id names another event;
-- ZF005 a name or key longer than settings.max_name_bytes, a payload over
-- settings.max_event_payload_bytes or nested deeper than settings.max_json_depth.
-- Locks: the event channel row (as wait_event does, so no wake-up is lost), then each pending wait
-- in id order, then the attempt parked on it; two emits of one name and key take turns.
create or replace function pgflight.emit_event(p_workspace text, p_name text, p_key text,
                                               p_payload jsonb default null, p_options jsonb default '{}')
returns table (event_id text, emitted boolean, woken integer)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('emit_event', p_options);  -- docs/options.md
  v_event_id text := pgflight._opt_string(v_opts, 'event_id', null, 1, 200, 'emit_event');
  v_settings pgflight.settings;
  v_ws bigint;
  v_row pgflight.emitted_events;
  v_wait record;
  v_woken integer := 0;
begin
  if p_workspace is null or p_name is null or btrim(p_name) = '' or p_key is null then
    raise exception using errcode = '22023',
      message = format('emit_event refused: %s is required',
                       case when p_workspace is null then 'the workspace'
                            when p_name is null or btrim(p_name) = '' then 'the event name' else 'the event key' end),
      hint = 'Pass a workspace name, an event name and an event key (the key may be empty, not null).';
  end if;
  select * into v_settings from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_name), 'event name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_settings.max_name_bytes, octet_length(p_key), 'event key (bytes)');
  perform pgflight._require_cap('max_event_payload_bytes', v_settings.max_event_payload_bytes,
                                octet_length(p_payload::text), 'event payload (bytes)');
  perform pgflight._require_json_depth(p_payload, 'event payload');
  select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
  if not found or not (pgflight._may('operator', v_ws) or pgflight._may('worker', v_ws)) then
    -- one answer for a workspace that does not exist and one this login has no lane on
    raise exception using errcode = 'ZF003', message = format('unknown workspace %L', left(p_workspace, 200)),
      hint = 'Emit in a workspace where your login is an operator or a worker.';
  end if;
  v_event_id := coalesce(v_event_id, pg_catalog.gen_random_uuid()::text);
  perform pgflight._lock_event_channel(v_ws, p_name, p_key);

  insert into pgflight.emitted_events as e (workspace_id, event_id, name, key, payload, emitted_at, expires_at, emitted_by)
  values (v_ws, v_event_id, p_name, p_key, p_payload, v_now,
          v_now + make_interval(secs => v_settings.event_retention_s), session_user::text)
  on conflict on constraint emitted_event_id_is_unique_per_workspace do nothing
  returning e.* into v_row;
  if not found then
    select e.* into v_row from pgflight.emitted_events e where e.workspace_id = v_ws and e.event_id = v_event_id;
    if v_row.name = p_name and v_row.key = p_key and v_row.payload is not distinct from p_payload then
      return query select v_event_id, false, 0;
      return;
    end if;
    raise exception using errcode = 'ZF004',
      message = format('event id %L already names another event', v_event_id),
      detail = 'An event id is emitted once per workspace; this one was emitted with another name, key or payload.',
      hint = 'Use a new event id for a new event.';
  end if;
  for v_wait in
    select w.id from pgflight.waits w
     where w.workspace_id = v_ws and w.event_name = p_name and w.event_key = p_key
       and w.kind = 'event' and w.outcome is null
     order by w.id
       for update
  loop
    if pgflight._resolve_wait(v_wait.id, 'received', p_payload, v_event_id, session_user::text) then
      v_woken := v_woken + 1;
    end if;
  end loop;
  return query select v_event_id, true, v_woken;
end
$$;
comment on function pgflight.emit_event(text, text, text, jsonb, jsonb) is
  'Emit an event (name, key, payload) in a workspace: kept for settings.event_retention_s, resolves every '
  'pending wait for it and requeues the steps parked on them; idempotent by options.event_id. Returns the '
  'event id, whether it was new, how many waits it woke. Errors: 22023, ZF003, ZF004, ZF005.';
grant execute on function pgflight.emit_event(text, text, text, jsonb, jsonb) to pgflight_operator, pgflight_worker;

commit;
