-- complete_and_claim claims first (started, as claim_batch with start) and completes the held
-- attempts given: the claimed steps come back with outcome null, then one row per attempt given
-- with complete_batch's outcome (a stale token: lease_lost, the step unchanged and the refusal
-- logged). Empty arrays only claim; a batch size the queue cannot fill claims what there is.
begin;
\ir ../_helpers.psql
select plan(9);

select step_id as ok_step, attempt_id as ok_a, token as ok_t from pgflight_test.hold(:w1) \gset
select run_id as lost_run, step_id as lost_step, attempt_id as lost_a, token as lost_t from pgflight_test.hold(:w1) \gset
select step_id as q_step, attempt_id as q_a from pgflight.submit_run('test', 'r', '{"n": 7}') \gset

create temp table out on commit drop as
  select * from pgflight.complete_and_claim(:w1, array[:ok_a, :lost_a]::bigint[], array[:ok_t, :lost_t + 1000]::bigint[],
                                            array['{"n": 1}', '{"n": 2}']::jsonb[], 5, 30, array['r'], '{"start": true}');
select results_eq('select attempt_id, step_id, input from out where outcome is null',
                  format('values (%s::bigint, %s::bigint, %L::jsonb)', :q_a, :q_step, '{"n": 7}'),
                  'the queued step is claimed (outcome null), with its input');
select ok((select fencing_token is not null and lease_expires_at is not null from out where outcome is null),
          'the claimed row carries its fencing token and lease');
select results_eq('select attempt_id, outcome from out where outcome is not null',
                  format('values (%s::bigint, %L), (%s, %L)', :ok_a, 'succeeded', :lost_a, 'lease_lost'),
                  'one outcome per attempt given, in order');
select is(pgflight_test.status(:ok_step), 'succeeded', 'the held attempt succeeded');
select is(pgflight_test.status(:lost_step), 'running', 'the stale one is unchanged');
select is(pgflight_test.events(:lost_run, :lost_step, 'stale_result_rejected'), 1::bigint, 'the stale completion is logged');
select is(pgflight_test.status(:q_step), 'running', 'the claim started the step (start option)');

select step_id as q2_step from pgflight.submit_run('test', 'r', '{}') \gset
select results_eq($$select count(*), count(*) filter (where outcome is null)
                      from pgflight.complete_and_claim($$ || :w1 || $$, '{}', '{}', '{}', 10, 30)$$,
                  'values (1::bigint, 1::bigint)', 'empty arrays: only the claim, of what is queued');
select is(pgflight_test.status(:q2_step), 'claimed', 'without the start option the claim leaves it claimed');

select * from finish();
rollback;
