-- A step's own lease_s overrides the caller's lease, and max_runtime_s sets the deadline; the
-- lease is stored on the attempt. At most one live attempt per step, enforced by an index.
begin;
\ir ../_helpers.psql
select plan(4);

select step_id, attempt_id from pgflight.submit_run('test', 'r', '{}', '{"lease_s": 7, "max_runtime_s": 100}') \gset
select results_eq(format('select lease_expires_at, deadline_at from pgflight.claim_batch(%s, 1, 30)', :w1),
                  $$values ('2030-01-01 00:00:07+00'::timestamptz, '2030-01-01 00:01:40+00'::timestamptz)$$,
                  'lease from the step''s lease_s, deadline from max_runtime_s');
select is((select lease_s from pgflight.step_attempts where id = :attempt_id), 7::double precision, 'the lease length is stored on the attempt');
select throws_ok(format('insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, status, available_after)
                         select %s, run_id, 2, recipe, %L, now() from pgflight.steps where id = %s', :step_id, 'queued', :step_id),
                 '23505', null, 'a second live attempt of one step is impossible (invariant 1)');
select is((select count(*) from pgflight.step_attempts where step_id = :step_id), 1::bigint, 'one attempt remains');

select * from finish();
rollback;
