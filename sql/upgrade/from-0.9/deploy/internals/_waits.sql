-- Deploy pgflight:internals/_waits
-- requires: tables/waits
-- requires: tables/emitted_events
-- requires: tables/event_channels
-- requires: tables/settings_waits
-- requires: internals/_transitions
-- requires: internals/_events
-- requires: internals/_trust
-- Defines: _resolve_wait(), _park_on_wait(), _lock_event_channel().
-- Waits (docs/waiting.md): a step parks on a timer or an event without a lease and without
-- spending an attempt. The parked attempt is in awaiting_approval, the one parking state shared
-- with approval gates (claims, reclaims and leases never see it; cancel_step and cancel_run end
-- it as they end an approval wait); the waits row says what it waits for. A wait is resolved by
-- the write that satisfies it, in that write's transaction (emit_event; wait_timer or wait_event
-- on a re-claim past due_at), or by the sweep (expire_waits). None is granted to any role.
begin;
set local role pgflight_owner;

-- Record a wait's outcome once and wake the attempt parked on it. The UPDATE's "outcome is null"
-- makes the first resolution win: a later one (a second emit, the sweep after an emit, an emit
-- after the timeout) changes nothing and returns false. The parked attempt is requeued at once
-- when it is still parked (a cancelled one stays cancelled). Lock order: the wait row, then the
-- attempt (a running attempt is never locked here: its committed status is not awaiting_approval).
create or replace function pgflight._resolve_wait(p_wait_id bigint, p_outcome text, p_payload jsonb,
                                                  p_event_id text, p_actor text)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_wait pgflight.waits;
  v_att_id bigint;
begin
  update pgflight.waits w
     set outcome = p_outcome, payload = p_payload, event_id = p_event_id, resolved_at = pgflight._now()
   where w.id = p_wait_id and w.outcome is null
  returning w.* into v_wait;
  if not found then
    return false;
  end if;
  if v_wait.parked_attempt_id is not null then
    update pgflight.step_attempts a
       set status = 'queued', available_after = pgflight._now()
     where a.id = v_wait.parked_attempt_id and a.status = 'awaiting_approval'
    returning a.id into v_att_id;
  end if;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_wait.step_id), v_wait.step_id,
                          v_att_id, case when v_att_id is null then null else 'awaiting_approval' end,
                          case when v_att_id is null then null else 'queued' end,
                          null, 'wait_resolved', p_actor,
                          jsonb_build_object('wait_key', v_wait.wait_key, 'kind', v_wait.kind,
                                             'outcome', p_outcome, 'event_id', p_event_id));
  if v_att_id is not null then
    perform pgflight._notify_ready();
  end if;
  return true;
end
$$;
comment on function pgflight._resolve_wait(bigint, text, jsonb, text, text) is
  'Internal: record a wait''s outcome if none is recorded yet (true) and requeue the attempt parked on it.';

-- Park the attempt the caller holds (locked by _lock_held) on a pending wait: no lease, no attempt
-- spent; the wait's resolution requeues it and the recipe runs again from the top.
create or replace function pgflight._park_on_wait(p_att pgflight.step_attempts, p_wait pgflight.waits)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  update pgflight.waits w set parked_attempt_id = p_att.id where w.id = p_wait.id;
  update pgflight.step_attempts a set status = 'awaiting_approval' where a.id = p_att.id;
  perform pgflight._event(p_att.run_id, p_att.step_id, p_att.id, p_att.status, 'awaiting_approval',
                          p_att.worker_id, 'wait_parked', null,
                          jsonb_strip_nulls(jsonb_build_object(
                            'wait_key', p_wait.wait_key, 'kind', p_wait.kind, 'event_name', p_wait.event_name,
                            'event_key', p_wait.event_key, 'due_at', p_wait.due_at)));
end
$$;
comment on function pgflight._park_on_wait(pgflight.step_attempts, pgflight.waits) is
  'Internal: park a held attempt on a pending wait (awaiting_approval, lease given up).';

-- Insert-or-lock the channel row of (workspace, name, key). wait_event and emit_event both take it
-- before they read the other side's rows, so of a wait being registered and an event being emitted
-- at the same time, the second to lock sees the first's committed rows: no lost wake-up.
create or replace function pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
  insert into pgflight.event_channels as c (workspace_id, name, key, touched_at)
  values (p_workspace_id, p_name, p_key, pgflight._now())
  on conflict on constraint event_channels_pkey do update set touched_at = excluded.touched_at;
end
$$;
comment on function pgflight._lock_event_channel(bigint, text, text) is
  'Internal: insert or lock the event channel row of a workspace, name and key (serialises waits and emits).';

commit;
