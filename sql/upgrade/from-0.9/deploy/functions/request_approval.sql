-- Deploy pgflight:functions/request_approval
begin;
set local role pgflight_owner;

-- A running attempt asks for a decision at gate p_gate_key. If the decision is already there
-- (it arrived early, C25, or the step runs again after the decision) it is returned at once and
-- the attempt keeps running. Otherwise the gate is recorded, the attempt goes to
-- awaiting_approval and gives up its lease; approve() or expire_approvals() requeues it and the
-- recipe, run again, calls request_approval with the same key and gets the decision.
-- options: expires_in_s (seconds until the default decision applies), default_decision
-- ('approve' | 'reject', default 'reject').
-- Once decided it returns the decision, who made it, the note and the payload the decider handed
-- back with it (approve's p_payload; null when none).
-- Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, 22023 bad arguments.
-- (v0.9.0 returned no payload column: the function is dropped and created again, since
-- `create or replace` cannot change a result type; a caller reading columns by name is unaffected.)
drop function if exists pgflight.request_approval(bigint, bigint, text, jsonb, jsonb);
create or replace function pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text,
                                          p_request jsonb default null, p_options jsonb default '{}')
returns table (decision text, actor text, note text, payload jsonb, waiting boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_gate record;
  v_default text := coalesce(pgflight._opt_text(p_options, 'default_decision', null), 'reject');
  v_expires double precision := pgflight._opt_num(p_options, 'expires_in_s', null);
begin
  -- every option checked against its spec first (docs/options.md; issue 14): 22023 naming the key
  p_options := pgflight._check_options('request_approval', p_options);
  if p_gate_key is null or btrim(p_gate_key) = '' then
    raise exception using errcode = '22023', message = 'gate key is required';
  end if;
  if v_default not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'default_decision must be approve or reject',
      detail = format('got %L', v_default);
  end if;
  if v_expires is not null then perform pgflight._require_positive('expires_in_s', v_expires); end if;
  -- issue 13: gate key and request are capped (ZF005, nothing written)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_gate_key), 'gate key (bytes)');
  perform pgflight._require_cap('max_approval_request_bytes',
                                (select s.max_approval_request_bytes from pgflight.settings s),
                                octet_length(p_request::text), 'approval request (bytes)');
  perform pgflight._require_json_depth(p_request, 'approval request');
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
    return query select v_gate.decision, v_gate.actor, v_gate.note, v_gate.payload, false;
    return;
  end if;
  update pgflight.step_attempts set status = 'awaiting_approval' where id = p_attempt_id;
  perform pgflight._event(v_att.run_id, v_att.step_id, p_attempt_id, v_att.status, 'awaiting_approval',
                          v_att.worker_id, 'approval_requested', null,
                          jsonb_build_object('gate_key', p_gate_key, 'expires_at', v_gate.expires_at));
  return query select null::text, null::text, null::text, null::jsonb, true;
end
$$;
comment on function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb) is
  'Ask for a decision at a gate: returns it at once if known, else parks the attempt in '
  'awaiting_approval (waiting = true); once decided: decision, actor, note and the decider''s payload. Options (docs/options.md): expires_in_s, default_decision. '
  'Errors: ZF001, ZF002, ZF003, 22023.';
grant execute on function pgflight.request_approval(bigint, bigint, text, jsonb, jsonb) to pgflight_worker;

commit;
