-- Deploy pgflight:functions/approve
begin;
set local role pgflight_owner;

-- Decide a gate: p_decision 'approve' or 'reject'. The first decision wins: the same decision
-- again is an idempotent no-op (applied = false); a different one raises ZF008. A decision made
-- before the step reaches the gate is stored and used when it gets there (C25). p_gate_key null
-- means the step's pending gate, else its latest gate, else 'approval'. Concurrent deciders are
-- serialised on the gate row (insert-or-lock), so exactly one decision is recorded.
-- p_payload: JSON handed back with the decision (docs/waiting.md#approvals-that-carry-data): the
-- step that asked receives it (request_approval's payload column). A tool gate of an agent
-- (gate key 'tool:<tool_use_id>', opened by a require_approval tool policy) takes only
-- {"arguments": {...}} (approve: run the tool once with these arguments instead of the model's)
-- or {"message": "..."} (do not run the tool: the model gets this text as the tool's result).
-- The payload is part of the first decision: the same decision again applies nothing and keeps
-- the first payload.
-- Errors: 22023 bad decision, a payload a tool gate does not take; ZF003 unknown step; ZF005 a
-- gate key longer than settings.max_name_bytes, a payload over settings.max_approval_request_bytes
-- or nested deeper than settings.max_json_depth; ZF008 already decided otherwise.
-- (The five-argument form of v0.9.0 is dropped: the sixth argument has a default, so every call
-- of the old form resolves to this one.)
drop function if exists pgflight.approve(bigint, text, text, text, text);
create or replace function pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text default null,
                                 p_gate_key text default null, p_payload jsonb default null)
returns table (step_id bigint, gate_key text, decision text, applied boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_key text := p_gate_key;
  v_gate record;
begin
  if p_decision is null or p_decision not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'decision must be approve or reject',
      detail = format('got %L', p_decision);
  end if;
  if p_payload is not null then
    perform pgflight._require_cap('max_approval_request_bytes',
                                  (select s.max_approval_request_bytes from pgflight.settings s),
                                  octet_length(p_payload::text), 'approval payload (bytes)');
    perform pgflight._require_json_depth(p_payload, 'approval payload');
  end if;
  perform pgflight._require_lane_on_step('operator', p_step_id, 'approve');  -- issue 13: tenants
  if not exists (select from pgflight.steps s where s.id = p_step_id) then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_key is not null then  -- a gate key is a name: capped like request_approval's
    perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                  octet_length(v_key), 'gate key (bytes)');
  else
    select g.gate_key into v_key from pgflight.approvals g
     where g.step_id = p_step_id order by g.decision is null desc, g.id desc limit 1;
    v_key := coalesce(v_key, 'approval');
  end if;
  insert into pgflight.approvals (step_id, gate_key) values (p_step_id, v_key)
  on conflict on constraint gate_key_is_unique_per_step do nothing;
  select g.* into v_gate from pgflight.approvals g where g.step_id = p_step_id and g.gate_key = v_key for update;
  if v_key like 'tool:%' and p_payload is not null
     and not (jsonb_typeof(p_payload) = 'object'
              and ((p_payload ? 'arguments' and jsonb_typeof(p_payload -> 'arguments') = 'object'
                    and p_decision = 'approve')
                   or (p_payload ? 'message' and jsonb_typeof(p_payload -> 'message') = 'string'))
              and (select count(*) from jsonb_object_keys(p_payload)) = 1) then
    raise exception using errcode = '22023',
      message = format('approve refused: the payload of tool gate %L must be {"arguments": {...}} or {"message": "..."}', v_key),
      detail = format('got a JSON %s%s', jsonb_typeof(p_payload),
                      case when jsonb_typeof(p_payload) = 'object'
                           then format(' with keys %s', (select string_agg(left(k, 40), ', ') from jsonb_object_keys(p_payload) k))
                           else '' end),
      hint = 'Approve with {"arguments": {...}} to run the tool with edited arguments, or with {"message": "..."} '
             'to answer the model instead of running it (approve or reject); a rejection takes no arguments.';
  end if;
  if v_gate.decision is not null then
    if v_gate.decision = p_decision then
      return query select p_step_id, v_key, v_gate.decision, false;
      return;
    end if;
    raise exception using errcode = 'ZF008', message = format('gate %L of step %s is already decided', v_key, p_step_id),
      detail = format('decided %s by %s at %s', v_gate.decision, v_gate.actor, v_gate.decided_at),
      hint = 'The first decision wins; it cannot be changed.';
  end if;
  update pgflight.approvals g set payload = p_payload where g.id = v_gate.id;
  perform pgflight._decide(v_gate.id, p_decision, session_user::text, pgflight._actor_note(p_note, p_actor), 'approval_decided');
  return query select p_step_id, v_key, p_decision, true;
end
$$;
comment on function pgflight.approve(bigint, text, text, text, text, jsonb) is
  'Decide an approval gate (approve | reject) with an optional JSON payload the step receives (a tool gate: '
  '{"arguments": {...}} or {"message": "..."}); first decision wins. Errors: 22023, ZF003, ZF005, ZF008.';
grant execute on function pgflight.approve(bigint, text, text, text, text, jsonb) to pgflight_operator;

commit;
