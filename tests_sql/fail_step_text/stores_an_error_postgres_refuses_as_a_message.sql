-- fail_step_text: an error PostgreSQL refuses (a NUL character) is stored as a message saying so
-- with the error's first characters, and the attempt fails as fail_step would (retry here); a
-- storable error is kept as given.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select is((select outcome from pgflight.fail_step_text(:attempt_id, :token, '{"message": "bad \u0000"}')),
          'retry', 'the attempt fails and is retried');
select results_eq(format('select error ->> %L, error ->> %L from pgflight.step_attempts where id = %s', 'sqlstate', 'raw', :attempt_id),
                  $$values ('22P05', '{"message": "bad \u0000"}')$$, 'the parser''s SQLSTATE and the raw text are kept');

select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w1, 'r2') \gset
select is((select outcome from pgflight.fail_step_text(:a2, :t2, '{"message": "plain"}', '{"retryable": false}')),
          'dead_letter', 'options are fail_step''s');
select is((select error from pgflight.step_attempts where id = :a2), '{"message": "plain"}'::jsonb, 'a storable error is kept');

select * from finish();
rollback;
