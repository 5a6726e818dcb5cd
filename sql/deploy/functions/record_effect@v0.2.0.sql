-- Deploy pgflight:functions/record_effect
begin;
set local role pgflight_owner;

-- Record the receipt of an external effect that attempt p_attempt_id performed under gate key
-- p_key. Called by the worker the instant the effect succeeded, before anything else.
-- Fencing, and why it differs from other worker writes: a receipt is a fact about the world, not
-- a claim on the step. If the holder's lease lapsed while the effect ran, the effect still
-- happened, and refusing the receipt would make the next attempt act a second time, which is the
-- very thing receipts exist to prevent. So the receipt is recorded for any caller that provably
-- held the attempt (p_token is the attempt's fencing token, whatever its status now), and the
-- answer says whether the caller still holds the lease (lease_held): when false the worker must
-- stop after recording (it raises lease lost itself) and write nothing else. A token that never
-- belonged to the attempt is refused with ZF001 and records nothing.
-- The first receipt for a key wins (insert-or-read on the unique key, so concurrent recorders
-- serialise on it); the returned result is the stored one, recorded tells whether this call stored it.
-- Errors: ZF001 token not this attempt's, ZF003 unknown attempt, 22023 blank key.
create or replace function pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb default null)
returns table (effect_id bigint, result jsonb, recorded boolean, lease_held boolean)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_att record;
  v_eff record;
begin
  if p_key is null or btrim(p_key) = '' then
    raise exception using errcode = '22023', message = 'effect key is required',
      hint = 'Pass a key that names the effect within its step, e.g. ''charge-invoice-42''.';
  end if;
  select a.id, a.step_id, a.status, a.fencing_token into v_att
    from pgflight.step_attempts a where a.id = p_attempt_id;
  if not found or v_att.fencing_token is distinct from p_token then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_effect');
  end if;
  insert into pgflight.effects as e (step_id, effect_key, result, attempt_id, recorded_at)
  values (v_att.step_id, p_key, p_result, p_attempt_id, pgflight._now())
  on conflict (step_id, effect_key) do nothing
  returning e.id, e.result into v_eff;
  if found then
    return query select v_eff.id, v_eff.result, true, v_att.status in ('claimed', 'running');
    return;
  end if;
  return query select e.id, e.result, false, v_att.status in ('claimed', 'running')
    from pgflight.effects e where e.step_id = v_att.step_id and e.effect_key = p_key;
end
$$;
comment on function pgflight.record_effect(bigint, bigint, text, jsonb) is
  'Record the receipt of an external effect (first per step and key wins), even from a holder whose '
  'lease lapsed; returns (effect_id, result, recorded, lease_held). Errors: ZF001, ZF003, 22023.';
grant execute on function pgflight.record_effect(bigint, bigint, text, jsonb) to pgflight_worker;

commit;
