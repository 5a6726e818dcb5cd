-- complete_step_text: a storable result completes the step as complete_step does; a result
-- PostgreSQL refuses (a NUL character) fails the step in the same call, not retried, with an
-- error that says why, instead of an error that leaves the attempt claimed.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select attempt_id, status from pgflight.complete_step_text(%s, %s, %L)', :attempt_id, :token, '{"ok": true}'),
                  format('values (%s::bigint, %L)', :attempt_id, 'succeeded'), 'a storable result succeeds');
select is((select result from pgflight.step_attempts where id = :attempt_id), '{"ok": true}'::jsonb, 'the result is stored');

select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w1, 'r2') \gset
select results_eq(format('select attempt_id, status from pgflight.complete_step_text(%s, %s, %L)', :a2, :t2, '{"t": "a\u0000b"}'),
                  format('values (%s::bigint, %L)', :a2, 'result_refused'), 'a result with a NUL fails the step');
select results_eq(format('select status, error ->> %L from pgflight.step_attempts where id = %s', 'sqlstate', :a2),
                  $$values ('dead_letter', '22P05')$$, 'dead-lettered at once with the parser''s SQLSTATE');
select throws_ok(format('select pgflight.complete_step_text(%s, %s, %L)', :a2, :t2, '{}'), 'ZF001', null,
                 'a second call is lease lost');

select * from finish();
rollback;
