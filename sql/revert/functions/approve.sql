-- Revert pgflight:functions/approve: restores the previous definition, deploy/functions/approve@v0.9.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;
drop function pgflight.approve(bigint, text, text, text, text, jsonb);

-- Decide a gate: p_decision 'approve' or 'reject'. The first decision wins: the same decision
-- again is an idempotent no-op (applied = false); a different one raises ZF008. A decision made
-- before the step reaches the gate is stored and used when it gets there (C25). p_gate_key null
-- means the step's pending gate, else its latest gate, else 'approval'. Concurrent deciders are
-- serialised on the gate row (insert-or-lock), so exactly one decision is recorded.
-- Errors: 22023 bad decision, ZF003 unknown step, ZF008 already decided otherwise.
create or replace function pgflight.approve(p_step_id bigint, p_decision text, p_actor text, p_note text default null,
                                 p_gate_key text default null)
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
  perform pgflight._require_lane_on_step('operator', p_step_id, 'approve');  -- issue 13: tenants
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
  perform pgflight._decide(v_gate.id, p_decision, session_user::text, pgflight._actor_note(p_note, p_actor), 'approval_decided');
  return query select p_step_id, v_key, p_decision, true;
end
$$;
comment on function pgflight.approve(bigint, text, text, text, text) is
  'Decide an approval gate (approve | reject); first decision wins. Errors: 22023, ZF003, ZF008.';
grant execute on function pgflight.approve(bigint, text, text, text, text) to pgflight_operator;

commit;
