-- Deploy pgflight:functions/approvals
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- A running attempt asks for a decision at gate p_gate_key. If the decision is already there
-- (it arrived early, C25, or the step runs again after the decision) it is returned at once and
-- the attempt keeps running. Otherwise the gate is recorded, the attempt goes to
-- awaiting_approval and gives up its lease; approve() or expire_approvals() requeues it and the
-- recipe, run again, calls request_approval with the same key and gets the decision.
-- options: expires_in_s (seconds until the default decision applies), default_decision
-- ('approve' | 'reject', default 'reject').
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 bad arguments.
create function pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text,
                                          p_request jsonb default null, p_options jsonb default '{}')
returns table (decision text, actor text, note text, waiting boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_gate record;
  v_default text := coalesce(pgflight._opt_text(p_options, 'default_decision', null), 'reject');
  v_expires double precision := pgflight._opt_num(p_options, 'expires_in_s', null);
begin
  if p_gate_key is null or btrim(p_gate_key) = '' then
    raise exception using errcode = '22023', message = 'gate key is required';
  end if;
  if v_default not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'default_decision must be approve or reject',
      detail = format('got %L', v_default);
  end if;
  if v_expires is not null then perform pgflight._require_positive('expires_in_s', v_expires); end if;
  v_att := pgflight._lock_held(p_attempt_id, p_token, 'request_approval');

  insert into pgflight.approvals as g (step_id, gate_key, request, default_decision, requested_at, expires_at)
  values (v_att.step_id, p_gate_key, p_request, v_default, v_now, v_now + make_interval(secs => v_expires))
  on conflict (step_id, gate_key) do update
     set request = coalesce(g.request, excluded.request),
         requested_at = coalesce(g.requested_at, excluded.requested_at),
         expires_at = coalesce(g.expires_at, excluded.expires_at),
         default_decision = case when g.requested_at is null then excluded.default_decision else g.default_decision end
  returning g.* into v_gate;

  if v_gate.decision is not null then
    return query select v_gate.decision, v_gate.actor, v_gate.note, false;
    return;
  end if;
  update pgflight.step_attempts set status = 'awaiting_approval' where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_approval',
                          v_att.worker_id, 'approval_requested', null,
                          jsonb_build_object('gate_key', p_gate_key, 'expires_at', v_gate.expires_at));
  return query select null::text, null::text, null::text, true;
end
$$;
comment on function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb) is
  'Ask for a decision at a gate: returns it at once if known, else parks the attempt in '
  'awaiting_approval (waiting = true). Errors: ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb) to pgflight_worker;

-- Shared by approve and expire_approvals: record the decision on a gate row the caller has
-- locked, and requeue the step if it is parked at that gate.
create function pgflight._decide(p_gate_id bigint, p_decision text, p_actor text, p_note text, p_reason text)
returns void
language plpgsql volatile
set search_path = ''
as $$
declare
  v_gate record;
  v_att record;
begin
  update pgflight.approvals
     set decision = p_decision, actor = p_actor, note = p_note, decided_at = pgflight._now()
   where id = p_gate_id
  returning * into v_gate;
  update pgflight.step_attempts a
     set status = 'queued', available_after = pgflight._now()
   where a.step_id = v_gate.step_id and a.status = 'awaiting_approval'
  returning a.id, a.run_id into v_att;
  perform pgflight._event((select s.run_id from pgflight.steps s where s.id = v_gate.step_id), v_gate.step_id,
                          v_att.id, case when v_att.id is null then null else 'awaiting_approval' end,
                          case when v_att.id is null then null else 'queued' end,
                          null, p_reason, p_actor,
                          jsonb_build_object('gate_key', v_gate.gate_key, 'decision', p_decision, 'note', p_note));
  if v_att.id is not null then
    perform pgflight._notify_ready();
  end if;
end
$$;
comment on function pgflight._decide(bigint, text, text, text, text) is
  'Internal: record a gate decision and requeue the step parked at it.';

-- Decide a gate: p_decision 'approve' or 'reject'. The first decision wins: the same decision
-- again is an idempotent no-op (applied = false); a different one raises ZF008. A decision made
-- before the step reaches the gate is stored and used when it gets there (C25). p_gate_key null
-- means the step's pending gate, else its latest gate, else 'approval'. Concurrent deciders are
-- serialised on the gate row (insert-or-lock), so exactly one decision is recorded.
-- Errors: 22023 bad decision, ZF003 unknown step, ZF008 already decided otherwise.
create function pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text default null,
                                 p_gate_key text default null)
returns table (step_id bigint, gate_key text, decision text, applied boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_key text := p_gate_key;
  v_gate record;
begin
  if p_decision is null or p_decision not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'decision must be approve or reject',
      detail = format('got %L', p_decision);
  end if;
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_key is null then
    select g.gate_key into v_key from pgflight.approvals g
     where g.step_id = p_step_id order by g.decision is null desc, g.id desc limit 1;
    v_key := coalesce(v_key, 'approval');
  end if;
  insert into pgflight.approvals (step_id, gate_key) values (p_step_id, v_key)
  on conflict on constraint gate_key_is_unique_per_step do nothing;
  select g.* into v_gate from pgflight.approvals g where g.step_id = p_step_id and g.gate_key = v_key for update;
  if v_gate.decision is not null then
    if v_gate.decision = p_decision then
      return query select p_step_id, v_key, v_gate.decision, false;
      return;
    end if;
    raise exception using errcode = 'ZF008', message = format('gate %L of step %s is already decided', v_key, p_step_id),
      detail = format('decided %s by %s at %s', v_gate.decision, v_gate.actor, v_gate.decided_at),
      hint = 'The first decision wins; it cannot be changed.';
  end if;
  perform pgflight._decide(v_gate.id, p_decision, coalesce(p_actor, session_user::text), p_note, 'approval_decided');
  return query select p_step_id, v_key, p_decision, true;
end
$$;
comment on function pgflight.approve(bigint, text, text, text, text) is
  'Decide an approval gate (approve | reject); first decision wins. Errors: 22023, ZF003, ZF008.';
grant execute on function pgflight.approve(bigint, text, text, text, text) to pgflight_operator;

-- Sweep: apply the default decision to gates past their expires_at. Bounded by p_limit.
create function pgflight.expire_approvals(p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_row record;
  v_count integer := 0;
begin
  for v_row in
    select g.id, g.default_decision from pgflight.approvals g
     where g.decision is null and g.expires_at < (select pgflight._now())
     order by g.expires_at limit p_limit
       for update skip locked
  loop
    perform pgflight._decide(v_row.id, v_row.default_decision, 'expire_approvals', 'expired', 'approval_expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
comment on function pgflight.expire_approvals(integer) is
  'Sweep: apply default decisions to expired gates; returns how many.';
grant execute on function pgflight.expire_approvals(integer) to pgflight_operator;

commit;
