-- Deploy pgflight:functions/purge_finished

begin;

set local role pgflight_owner;

-- Sweep: delete runs finished more than p_older_than_s seconds ago (default
-- settings.purge_after_s), with their steps, attempts, gates, effects, budgets and agent runs, at
-- most p_limit runs per call (default 1,000: one bounded transaction); sweep_loop calls it every
-- pass while a batch is full, so there is no cap per hour or day. Returns the number of runs
-- deleted. The firehose rows are not deleted here: their events go with their day partition
-- (maintain_partitions, settings.events_keep_s), their traces and costs with their agent-run-id
-- partition once every agent run in it is purged (maintain_partitions, tables/firehose_by_agent_run).
--
-- Retention: the rows are deleted table by table, set-based, children after their
-- parents are locked, with session_replication_role = replica for the call
-- (roles/owner_sets_replication_role), so the foreign keys' ON DELETE CASCADE triggers do not fire: as
-- a cascade from runs they ran one query per deleted row and key, nine for a one-step run, most
-- of the purge's time. The keys still hold, because of the order:
--   1. the runs FOR UPDATE SKIP LOCKED (as before): from here no row naming one of them can be
--      inserted (its foreign-key check takes KEY SHARE on the run and waits for this transaction,
--      then finds the run gone and fails);
--   2. their steps deleted (every step of a run carries its run_id, children too), which locks
--      them: likewise no row naming one of them can be inserted from here; a transaction that
--      inserted one already is waited for, and the next statement sees its row;
--   3. what names those steps or runs: attempts, approvals, effects, budgets (step and run scope;
--      a step's budget names the step's own run, begin_agent_run), agent runs; then the runs.
-- Every other path keeps its foreign-key checks and cascades (the mode is local to this call).
-- Where the owner may not set the parameter (deployed by a role that is not a superuser), the
-- runs are deleted by cascade as before: the same rows go, slower.
CREATE OR REPLACE FUNCTION pgflight.purge_finished(p_older_than_s double precision DEFAULT NULL::double precision, p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_steps bigint[];
  v_age double precision;
  v_role text;              -- session_replication_role to restore (null: not switched)
begin
  perform pgflight._require_lane('operator', null, 'purge_finished');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  if p_older_than_s is not null then
    perform pgflight._check_arg('older_than_s', p_older_than_s, 0, 3153600000);
  end if;
  v_age := coalesce(p_older_than_s, (select s.purge_after_s from pgflight.settings s));
  select array_agg(r.id) into v_ids from (
    -- a run finishes after it is created, so created_at bounds the scan (runs_created_idx)
    select r.id from pgflight.runs r
     where r.created_at < (select pgflight._now()) - make_interval(secs => v_age)
       and r.finished_at < (select pgflight._now()) - make_interval(secs => v_age)
       -- a cancelled run may still have an attempt whose worker has not acknowledged: keep it
       and not exists (select from pgflight.steps s
                          join pgflight.step_attempts a on a.step_id = s.id
                        where s.run_id = r.id
                          and a.status in ('queued', 'claimed', 'running', 'cancel_requested',
                                           'awaiting_children', 'awaiting_approval'))
     order by r.created_at limit p_limit
       for update skip locked) r;
  if v_ids is null then
    return 0;
  end if;
  -- replica for the deletes below when the owner may (internals/_row_triggers); else the cascade
  v_role := pgflight._row_triggers_off();
  if v_role is null and pg_catalog.current_setting('session_replication_role') <> 'replica' then
    delete from pgflight.runs r where r.id = any (v_ids);
    return cardinality(v_ids);
  end if;

  with d as (
    delete from pgflight.steps s where s.run_id = any (v_ids) returning s.id
  )
  select coalesce(array_agg(d.id), '{}') into v_steps from d;
  delete from pgflight.step_attempts a where a.step_id = any (v_steps);
  delete from pgflight.approvals g where g.step_id = any (v_steps);
  delete from pgflight.waits w where w.step_id = any (v_steps);  -- waits_step_key_is_unique
  delete from pgflight.effects e where e.step_id = any (v_steps);
  delete from pgflight.budgets b where b.scope = 'step' and b.step_id = any (v_steps);  -- budgets_step_idx
  delete from pgflight.budgets b where b.scope = 'run' and b.run_id = any (v_ids);     -- budgets_run_idx
  delete from pgflight.agent_runs a where a.step_id = any (v_steps) or a.run_id = any (v_ids);
  delete from pgflight.runs r where r.id = any (v_ids);
  if v_role is not null then
    perform pgflight._row_triggers_on(v_role);  -- a definer of pgflight_privileged: the owner may not set it
  end if;
  return cardinality(v_ids);
end
$$;

COMMENT ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) IS 'Sweep: delete finished runs older than p_older_than_s seconds with all their rows; returns the count.';

REVOKE ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.purge_finished(p_older_than_s double precision, p_limit integer) TO pgflight_operator;

commit;
