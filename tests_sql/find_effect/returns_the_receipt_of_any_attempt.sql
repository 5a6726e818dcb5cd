-- find_effect: no row before the effect; after record_effect, the receipt (result, attempt) —
-- also for a later attempt of the same step, which is how a retry learns not to act again.
begin;
\ir ../_helpers.psql
select plan(3);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'charge') \gset
select is_empty(format($$select * from pgflight.find_effect(%s, 'charge-1')$$, :step_id),
  'no receipt before the effect');
select pgflight.record_effect(:attempt_id, :token, 'charge-1', '{"charge_id": "ch_1"}');
select pgflight.fail_step(:attempt_id, :token, '{"message": "crashed after charging"}', '{"retry_after_s": 0}');
select results_eq(format($$select result, attempt_id from pgflight.find_effect(%s, 'charge-1')$$, :step_id),
  format($$values ('{"charge_id": "ch_1"}'::jsonb, %s::bigint)$$, :attempt_id),
  'the receipt names the attempt that acted and is found after the retry');
select is_empty(format($$select * from pgflight.find_effect(%s, 'charge-2')$$, :step_id),
  'another key has no receipt');

select * from finish();
rollback;
