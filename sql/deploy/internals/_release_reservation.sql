-- Deploy pgflight:internals/_release_reservation

begin;

set local role pgflight_owner;

-- End the reservation an agent run holds (a lapsed attempt, or one superseded by a retry), and
-- forget the attempt that reserved (tables/agent_runs_hot): the run leaves agent_runs_reserved_idx.
-- The ledger never counts less than was spent: a reservation whose call was out
-- (reserved_call_out: the admission just before the request left, and no answer recorded since)
-- may have been answered and charged by the provider, and nobody can know. It is not released but
-- charged: a costs row marked unknown_outcome (and lease_lost: no iteration of the transcript is
-- claimed) with the reservation as its usd and the budgets it was taken on, spent on those budgets
-- and added to the agent's usd. A late answer of that attempt and iteration (record_orphan_cost)
-- settles it to the real figures; a row the late answer already wrote first is kept and the
-- reservation only released. A reservation taken ahead of its call (record_model_call's next
-- call, while the tools run) is released.
-- Seq scans off, as _move_budget.
CREATE OR REPLACE FUNCTION pgflight._release_reservation(p_agent_run_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_run pgflight.agent_runs;
begin
  select r.* into v_run from pgflight.agent_runs r where r.id = p_agent_run_id;
  if v_run.reserved_attempt_id is null then
    return;
  end if;
  if v_run.reserved_iteration is not null and v_run.reserved_call_out then
    insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd, attempt_id, at,
                                lease_lost, unknown_outcome, budget_ids)
    values (v_run.id, v_run.reserved_iteration, v_run.step_id, v_run.run_id, v_run.workspace_id, v_run.model,
            v_run.reserved_usd, v_run.reserved_attempt_id, pgflight._now(), true, true, v_run.reserved_budget_ids)
    on conflict (agent_run_id, iteration, attempt_id) where lease_lost do nothing;
    if found then
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, v_run.reserved_usd, v_run.reserved_usd, false, null,
                                    format('agent_run=%s iteration=%s unknown outcome: charged at its reservation',
                                           v_run.id, v_run.reserved_iteration));
      update pgflight.agent_runs set usd = usd + v_run.reserved_usd where id = p_agent_run_id;
    else
      perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
    end if;
  elsif v_run.reserved_iteration is not null then
    perform pgflight._move_budget(v_run.reserved_budget_ids, 0, 0, v_run.reserved_usd, false, null, 'release');
  end if;
  update pgflight.agent_runs
     set reserved_usd = 0, reserved_attempt_id = null, reserved_iteration = null, reserved_budget_ids = null,
         reserved_call_out = false
   where id = p_agent_run_id;
end
$$;

COMMENT ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) IS 'Internal: end an agent run''s USD reservation (charged as an unknown_outcome cost when its call was out, else released) and forget the attempt that reserved.';

REVOKE ALL ON FUNCTION pgflight._release_reservation(p_agent_run_id bigint) FROM PUBLIC;

commit;
