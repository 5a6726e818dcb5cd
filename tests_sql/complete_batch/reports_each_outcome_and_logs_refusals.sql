-- complete_batch completes the held attempts and reports lease_lost / cancelled for the others
-- without raising, logging a stale_result_rejected event for each refusal. Arrays of different
-- lengths are 22023.
begin;
\ir ../_helpers.psql
select plan(7);

select step_id as ok_step, attempt_id as ok_a, token as ok_t from pgflight_test.hold(:w1) \gset
select run_id as lost_run, step_id as lost_step, attempt_id as lost_a, token as lost_t from pgflight_test.hold(:w1) \gset
select run_id as cx_run, step_id as cx_step, attempt_id as cx_a, token as cx_t from pgflight_test.hold(:w1) \gset
select pgflight.cancel_run(:cx_run) \gset

create temp table out on commit drop as
  select * from pgflight.complete_batch(array[:ok_a, :lost_a, :cx_a]::bigint[], array[:ok_t, :lost_t + 1000, :cx_t]::bigint[],
                                        array['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[]);
select results_eq('select attempt_id, outcome from out',
                  format('values (%s::bigint, %L), (%s, %L), (%s, %L)', :ok_a, 'succeeded', :lost_a, 'lease_lost', :cx_a, 'cancelled'),
                  'one outcome per row, in order');
select is(pgflight_test.status(:ok_step), 'succeeded', 'the held attempt succeeded');
select is(pgflight_test.status(:lost_step), 'running', 'the stale one is unchanged');
select is(pgflight_test.status(:cx_step), 'cancel_requested', 'the cancelled one is unchanged');
select is(pgflight_test.events(:lost_run, :lost_step, 'stale_result_rejected'), 1::bigint, 'the stale completion is logged');
select is(pgflight_test.events(:cx_run, :cx_step, 'stale_result_rejected'), 1::bigint, 'the completion after cancel is logged');
select throws_ok('select pgflight.complete_batch(array[1, 2]::bigint[], array[1, 2]::bigint[], array[null]::jsonb[])', '22023', null,
                 'arrays of different lengths are 22023');

select * from finish();
rollback;
