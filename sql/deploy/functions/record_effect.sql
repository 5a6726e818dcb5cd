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
-- belonged to the attempt is refused with ZF001 and records nothing. The fence comes first (the
-- rule in internals/_fencing): a NULL id or token is 22023 (a never-claimed attempt has a NULL
-- token: a NULL sent for it stored a receipt the holder then trusted), an attempt outside the
-- login's worker lanes is unknown (ZF003), and one held by another login's worker ZF012.
-- The first receipt for a key wins (insert-or-read on the unique key, so concurrent recorders
-- serialise on it); the returned result is the stored one, recorded tells whether this call stored it.
-- Errors: 22023 NULL attempt id or token, blank key; ZF001 token not this attempt's; ZF003 unknown
-- attempt (or outside the login's worker lanes); ZF005 key or receipt over its cap; ZF012 the
-- attempt is held by another login's worker.
CREATE OR REPLACE FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb DEFAULT NULL::jsonb) RETURNS TABLE(effect_id bigint, result jsonb, recorded boolean, lease_held boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_att record;
  v_eff record;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_effect', case when p_attempt_id is null then 'the attempt id'
                                                         else 'the fencing token' end);
  end if;
  if p_key is null or btrim(p_key) = '' then
    raise exception using errcode = '22023', message = 'effect key is required',
      hint = 'Pass a key that names the effect within its step, e.g. ''charge-invoice-42''.';
  end if;
  -- the fence: this token is the attempt's (whatever its status now) and a worker of this login
  -- claimed it; otherwise _reject_write raises (ZF003 unknown or outside the lanes, ZF012, ZF001)
  select a.id, a.step_id, a.status into v_att
    from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_effect');
  end if;
  -- key and receipt are capped (ZF005)
  perform pgflight._require_cap('max_name_bytes', (select s.max_name_bytes from pgflight.settings s),
                                octet_length(p_key), 'effect key (bytes)');
  perform pgflight._require_cap('max_receipt_bytes', (select s.max_receipt_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'receipt (bytes)');
  perform pgflight._require_json_depth(p_result, 'receipt');
  if length(p_key) > 500 then  -- the effects check constraint, as 22023
    raise exception using errcode = '22023', message = 'effect key is longer than 500 characters',
      detail = format('got %s characters', length(p_key)), hint = 'Use a shorter key, e.g. a hash of the long one.';
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

COMMENT ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) IS 'Record the receipt of an external effect (first per step and key wins), even from a holder whose lease lapsed; returns (effect_id, result, recorded, lease_held). Errors: 22023, ZF001, ZF003, ZF005, ZF012.';

REVOKE ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.record_effect(p_attempt_id bigint, p_token bigint, p_key text, p_result jsonb) TO pgflight_worker;

commit;
