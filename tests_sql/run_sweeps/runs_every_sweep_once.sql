-- run_sweeps runs reclaim_expired, wake_parents and expire_approvals (and enforce_budgets when
-- deployed), each once, and reports what each did.
begin;
\ir ../_helpers.psql
select plan(3);

select step_id from pgflight_test.hold(:w1, 'r', '{}', 5) \gset
set local pgflight.fake_now = '2030-01-01 00:01:00+00';
create temp table sw on commit drop as select * from pgflight.run_sweeps();
select ok((select array_agg(sweep) from sw) @> array['reclaim_expired', 'wake_parents', 'expire_approvals'],
          'the three core sweeps run');
select is((select affected from sw where sweep = 'reclaim_expired'), 1, 'the expired lease was reclaimed');
select is(pgflight_test.status(:step_id), 'queued', 'and its step is queued again');

select * from finish();
rollback;
