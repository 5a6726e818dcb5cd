-- Deploy pgflight:functions/record_orphan_cost
begin;
set local role pgflight_owner;

-- A model call that was paid for but that record_model_call refused with ZF001 or ZF002 (the
-- attempt lost its lease, or its run was cancelled, while the model answered): the money is spent
-- and budgets must see it (issue 14). Writes it to costs marked lease_lost (no traces: the
-- iteration is still open for whoever holds the step now) and charges it — without any cap
-- check, it is already spent — to every budget the call was bound by, and to the agent's usd; a
-- reservation this attempt held for the iteration is settled instead. Its input + output tokens
-- count in the workspace's model tokens per minute (issue 15), like a recorded call's. Idempotent per (agent run,
-- iteration, attempt): a repeat returns recorded = false. The late answer of a call that was charged
-- at its reservation (costs.unknown_outcome: its attempt ended with the request out) settles that
-- row to the real figures instead (recorded = true), moving its budgets and the agent's usd by the
-- difference.
-- Whom it trusts: p_token must be the fencing token that was issued to p_attempt_id (whatever the
-- attempt's status now) by a claim of a worker of this login, and p_agent_run_id the agent of that
-- attempt's step. The fence comes first (the rule in internals/_fencing): a NULL id or token is
-- 22023 (a never-claimed attempt has a NULL token: a NULL sent for it charged that workspace's
-- budgets), an attempt outside the login's worker lanes is unknown (ZF003).
-- options: stop_reason (text), retries (integer), why (text: the refusal, kept in the budget log).
-- Locking: the agent_runs row FOR UPDATE, then budgets in id order (docs/locking.md); the
-- attempt is read, not locked (it is no longer held by anyone who could write with this token).
-- Errors: ZF001 the token was never this attempt's, ZF003 unknown attempt (or outside the login's
-- worker lanes) or agent run, ZF012 the attempt was claimed by another login's worker, 22023 a
-- NULL attempt id or token, bad iteration, usage, options or a model without a price.
create or replace function pgflight.record_orphan_cost(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint,
                                                       p_iteration integer, p_usage jsonb, p_model text,
                                                       p_options jsonb default '{}')
returns table (agent_run_id bigint, iteration integer, usd numeric, recorded boolean)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now timestamptz := pgflight._now();
  v_opts jsonb := pgflight._check_options('record_orphan_cost', p_options);
  v_att record;
  v_run pgflight.agent_runs;
  v_usd numeric;
  v_in bigint := pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage');
  v_out bigint := pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage');
  v_cw bigint := pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage');
  v_cr bigint := pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage');
  v_x record := pgflight._usage_extras(p_usage);  -- one-hour cache writes, web searches
  v_tokens_per_min bigint;
  v_est pgflight.costs;  -- the unknown-outcome row this answer settles
begin
  if p_iteration is null or p_iteration < 1 then
    raise exception using errcode = '22023', message = 'iteration must be >= 1', detail = format('got %s', p_iteration);
  end if;
  if p_model is null or length(p_model) not between 1 and 256 then
    raise exception using errcode = '22023', message = 'model is required (at most 256 characters)';
  end if;
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('record_orphan_cost', case when p_attempt_id is null then 'the attempt id'
                                                              else 'the fencing token' end);
  end if;
  -- the fence: this token was issued to the attempt (whatever its status now) by a claim of a
  -- worker of this login; otherwise _reject_write raises (ZF003 unknown or outside the lanes,
  -- ZF012 another login's worker, ZF001)
  select a.step_id into v_att from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, 'record_orphan_cost');
  end if;
  select r.* into v_run from pgflight.agent_runs r
   where r.id = p_agent_run_id and r.step_id = v_att.step_id
     for update;
  if not found then
    raise exception using errcode = 'ZF003',
      message = format('unknown agent run %s for attempt %s', p_agent_run_id, p_attempt_id);
  end if;
  v_usd := pgflight._price_usd(p_model, coalesce(p_usage, '{}'));

  insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, input_tokens,
                              output_tokens, cache_creation_tokens, cache_read_tokens, usd, stop_reason,
                              retries, attempt_id, at, lease_lost, cache_creation_1h_tokens, web_search_requests)
  values (v_run.id, p_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, p_model, v_in, v_out, v_cw, v_cr,
          v_usd, v_opts ->> 'stop_reason', coalesce((v_opts ->> 'retries')::integer, 0), p_attempt_id, v_now, true,
          v_x.cw_1h, v_x.searches)
  on conflict (agent_run_id, iteration, attempt_id) where lease_lost do nothing;
  if not found then
    -- the late answer of a call charged at its reservation when its attempt ended with it out
    -- (_release_reservation): the row becomes the real figures, and the budgets it was charged to
    -- and the agent's totals move by the difference (less when the answer cost less)
    select o.* into v_est from pgflight.costs o
     where o.agent_run_id = v_run.id and o.iteration = p_iteration and o.attempt_id = p_attempt_id
       and o.lease_lost and o.unknown_outcome
       for update;
    if found then
      update pgflight.costs c
         set model = p_model, input_tokens = v_in, output_tokens = v_out, cache_creation_tokens = v_cw,
             cache_read_tokens = v_cr, cache_creation_1h_tokens = v_x.cw_1h, web_search_requests = v_x.searches,
             usd = v_usd, stop_reason = v_opts ->> 'stop_reason',
             retries = coalesce((v_opts ->> 'retries')::integer, 0), unknown_outcome = false
       where c.agent_run_id = v_run.id and c.id = v_est.id;
      perform pgflight._move_budget(v_est.budget_ids, 0, v_usd - v_est.usd, 0, false, v_now,
                                    format('agent_run=%s iteration=%s settled: the answer of a call charged at '
                                           'its reservation', v_run.id, p_iteration));
      update pgflight.agent_runs r
         set usd = greatest(r.usd + v_usd - v_est.usd, 0), input_tokens = r.input_tokens + v_in,
             output_tokens = r.output_tokens + v_out, cache_creation_tokens = r.cache_creation_tokens + v_cw,
             cache_read_tokens = r.cache_read_tokens + v_cr, updated_at = v_now
       where r.id = v_run.id;
      return query select v_run.id, p_iteration, v_usd, true;
      return;
    end if;
    return query select v_run.id, p_iteration, c.usd, false from pgflight.costs c
      where c.agent_run_id = v_run.id and c.iteration = p_iteration and c.attempt_id = p_attempt_id and c.lease_lost;
    return;
  end if;

  -- the workspace's model tokens per minute: the tokens were used (replacing an admitted estimate)
  select l.model_tokens_per_min into v_tokens_per_min
    from pgflight.workspace_limits l where l.workspace_id = v_run.workspace_id;
  if v_tokens_per_min is not null then
    perform pgflight._settle_tokens(v_run, v_tokens_per_min, v_in + v_out,
                                    v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration,
                                    v_now);
  end if;
  if v_run.reserved_attempt_id = p_attempt_id and v_run.reserved_iteration = p_iteration then
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_usd, v_run.reserved_usd, false, v_now,
                                  'settle (lease lost)');
    update pgflight.agent_runs r
       set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
           reserved_call_out = false
     where r.id = v_run.id;
  else
    perform pgflight._move_budget(pgflight._call_budget_ids(v_run, v_now), 0, v_usd, 0, false, v_now,
                                  format('agent_run=%s iteration=%s lease lost: %s', v_run.id, p_iteration,
                                         coalesce(v_opts ->> 'why', 'paid call of a lost lease')));
  end if;
  update pgflight.agent_runs r
     set usd = r.usd + v_usd, input_tokens = r.input_tokens + v_in, output_tokens = r.output_tokens + v_out,
         cache_creation_tokens = r.cache_creation_tokens + v_cw, cache_read_tokens = r.cache_read_tokens + v_cr,
         updated_at = v_now
   where r.id = v_run.id;
  return query select v_run.id, p_iteration, v_usd, true;
end
$$;
comment on function pgflight.record_orphan_cost(bigint, bigint, bigint, integer, jsonb, text, jsonb) is
  'Record the cost of a paid model call whose attempt lost its lease (costs.lease_lost) and charge it to '
  'the budgets, uncapped; idempotent per (agent run, iteration, attempt). Options (docs/options.md): '
  'stop_reason, retries, why. Errors: 22023, ZF001, ZF003, ZF012.';
grant execute on function pgflight.record_orphan_cost(bigint, bigint, bigint, integer, jsonb, text, jsonb) to pgflight_worker;

commit;
