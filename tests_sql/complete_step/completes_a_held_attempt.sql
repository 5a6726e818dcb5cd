-- complete_step: the holder's completion stores the result, makes the step succeeded, ends a
-- root's run and is logged once. A second completion is refused (ZF001).
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
set local pgflight.fake_now = '2030-01-01 00:00:03+00';
select results_eq(format('select attempt_id, status from pgflight.complete_step(%s, %s, %L)', :attempt_id, :token, '{"ok": true}'),
                  format('values (%s::bigint, %L)', :attempt_id, 'succeeded'), 'returns succeeded');
select results_eq(format('select status, result, finished_at from pgflight.step_attempts where id = %s', :attempt_id),
                  $$values ('succeeded', '{"ok": true}'::jsonb, '2030-01-01 00:00:03+00'::timestamptz)$$,
                  'the attempt is succeeded with its result and finish time');
select results_eq(format('select status, finished_at from pgflight.runs where id = %s', :run_id),
                  $$values ('succeeded', '2030-01-01 00:00:03+00'::timestamptz)$$, 'the root ends its run');
select is(pgflight_test.events(:run_id, :step_id, 'succeeded'), 1::bigint, 'succeeded is logged');
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :attempt_id, :token, '{"ok": false}'), 'ZF001', null,
                 'a second completion is lease lost');
select is((select result from pgflight.step_attempts where id = :attempt_id), '{"ok": true}'::jsonb, 'the first result stays');

-- complete without start (claimed -> succeeded) is allowed and sets started_at
select attempt_id as a2, token as t2 from pgflight_test.hold(:w1, 'r', '{}', 30, false) \gset
select pgflight.complete_step(:a2, :t2) \gset
select is((select started_at from pgflight.step_attempts where id = :a2), '2030-01-01 00:00:03+00'::timestamptz,
          'completing a claimed attempt records started_at = claimed_at');

select * from finish();
rollback;
