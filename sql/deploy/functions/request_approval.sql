-- Deploy pgflight:functions/request_approval

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(decision text, actor text, note text, payload jsonb, waiting boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_att pgflight.step_attempts;
  v_gate record;
  v_default text := coalesce(pgflight._opt_text(p_options, 'default_decision', null), 'reject');
  v_expires double precision := pgflight._opt_num(p_options, 'expires_in_s', null);
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('request_approval', p_options);
  if p_gate_key is null or btrim(p_gate_key) = '' then
    raise exception using errcode = '22023', message = 'gate key is required';
  end if;
  if v_default not in ('approve', 'reject') then
    raise exception using errcode = '22023', message = 'default_decision must be approve or reject',
      detail = format('got %L', v_default);
  end if;
  if v_expires is not null then perform pgflight._require_positive('expires_in_s', v_expires); end if;
  -- gate key and request are capped (ZF005, nothing written)
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

COMMENT ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) IS 'Ask for a decision at a gate: returns it at once if known, else parks the attempt in awaiting_approval (waiting = true); once decided: decision, actor, note and the decider''s payload. Options (docs/options.md): expires_in_s, default_decision. Errors: ZF001, ZF002, ZF003, 22023.';

REVOKE ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.request_approval(p_attempt_id bigint, p_token bigint, p_gate_key text, p_request jsonb, p_options jsonb) TO pgflight_worker;

commit;
