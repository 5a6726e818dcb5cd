-- purge_finished deletes, with a finished run, every row that names the run or one of its steps:
-- the steps (children too), attempts, gates, waits, effects, budgets of run and step scope, the agent run
-- (since the purge deletes them itself, table by table, with the foreign keys' cascades
-- not firing, this is what keeps the keys whole). The same rows go where the owner may not set
-- session_replication_role and the purge falls back to the cascade. The last test lists the
-- foreign keys to runs and steps: a new one needs its own delete in purge_finished.
begin;
\ir ../_helpers.psql
select plan(6);

create function pgflight_test.finished_run_with_everything(p_worker bigint)
returns bigint
language plpgsql as $$
declare
  v record;
  v_child bigint;
begin
  select h.* into v from pgflight_test.hold(p_worker) h;
  perform pgflight.complete_step(v.attempt_id, v.token);
  insert into pgflight.steps (run_id, parent_id, depth, step_key, recipe, input, max_attempts)
  values (v.run_id, v.step_id, 1, 'child', 'r', '{}', 3) returning id into v_child;
  insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, status, available_after, finished_at)
  values (v_child, v.run_id, 1, 'r', 'succeeded', pgflight._now(), pgflight._now());
  insert into pgflight.approvals (step_id, gate_key) values (v_child, 'gate');
  insert into pgflight.waits (step_id, wait_key, kind, workspace_id, due_at, requested_at, outcome, resolved_at)
  select v_child, 'nap', 'timer', r.workspace_id, pgflight._now(), pgflight._now(), 'elapsed', pgflight._now()
    from pgflight.runs r where r.id = v.run_id;
  insert into pgflight.effects (step_id, effect_key, attempt_id) values (v.step_id, 'effect', v.attempt_id);
  insert into pgflight.budgets (scope, workspace_id, run_id, limit_usd)
  select 'run', r.workspace_id, r.id, 1 from pgflight.runs r where r.id = v.run_id;
  insert into pgflight.budgets (scope, workspace_id, run_id, step_id, limit_usd)
  select 'step', r.workspace_id, r.id, v_child, 1 from pgflight.runs r where r.id = v.run_id;
  insert into pgflight.agent_runs (step_id, run_id, workspace_id, model, system_prompt_hash)
  select v_child, r.id, r.workspace_id, 'claude-haiku-4-5', 'x' from pgflight.runs r where r.id = v.run_id;
  return v.run_id;
end
$$;

-- every row of a table with a foreign key to runs or steps whose key names no row any more
create function pgflight_test.orphans()
returns bigint
language plpgsql as $$
declare
  v_fk record;
  v_n bigint;
  v_total bigint := 0;
begin
  for v_fk in
    select c.conrelid::regclass as child, a.attname as col, c.confrelid::regclass as parent
      from pg_catalog.pg_constraint c
      join pg_catalog.pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
     where c.contype = 'f' and c.confrelid in ('pgflight.runs'::regclass, 'pgflight.steps'::regclass)
  loop
    execute format('select count(*) from %s x where x.%I is not null and not exists (select from %s p where p.id = x.%I)',
                   v_fk.child, v_fk.col, v_fk.parent, v_fk.col) into v_n;
    v_total := v_total + v_n;
  end loop;
  return v_total;
end
$$;

select pgflight_test.finished_run_with_everything(:w1) as old_run \gset
set local pgflight.fake_now = '2030-01-01 02:00:00+00';
select is(pgflight.purge_finished(3600), 1, 'the finished run is purged');
select is(pgflight_test.orphans(), 0::bigint, 'no row names a purged run or step');
select is((select count(*) from pgflight.budgets where run_id = :old_run), 0::bigint, 'its budgets are gone');

-- the owner without the right to set session_replication_role: the cascade, the same rows
revoke set on parameter session_replication_role from pgflight_owner;
select pgflight_test.finished_run_with_everything(:w1) as old_run \gset
set local pgflight.fake_now = '2030-01-01 04:00:00+00';
select is(pgflight.purge_finished(3600), 1, 'without the parameter right the run is purged too');
select is(pgflight_test.orphans(), 0::bigint, 'by cascade: no row names a purged run or step either');

select is(
  (select string_agg(c.conrelid::regclass::text || '.' || a.attname::text, ', '
                     order by c.conrelid::regclass::text || '.' || a.attname::text)
     from pg_catalog.pg_constraint c
     join pg_catalog.pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
    where c.contype = 'f' and c.confrelid in ('pgflight.runs'::regclass, 'pgflight.steps'::regclass)),
  'pgflight.agent_runs.run_id, pgflight.agent_runs.step_id, pgflight.approvals.step_id, pgflight.budgets.run_id, '
  'pgflight.budgets.step_id, pgflight.effects.step_id, pgflight.step_attempts.step_id, pgflight.steps.parent_id, '
  'pgflight.steps.run_id, pgflight.waits.step_id',
  'the foreign keys to runs and steps are the ones purge_finished deletes by');

select * from finish();
rollback;
