-- wait_timer refuses bad arguments before it writes: 22023 for NULL or blank values, negative
-- seconds, unknown options and a key that names an event wait; ZF005 for a key over the name cap;
-- the fence's answers for a NULL, unknown or foreign attempt.
begin;
\ir ../_helpers.psql
select plan(10);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.wait_timer(%s, %s, null, 1)', :attempt_id, :token), '22023', null, 'a NULL key is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1)', :attempt_id, :token, ' '), '22023', null, 'a blank key is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, null)', :attempt_id, :token, 'k'), '22023', null, 'NULL seconds is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, -1)', :attempt_id, :token, 'k'), '22023', null, 'negative seconds is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1, %L)', :attempt_id, :token, 'k', '{"until": 1}'), '22023', null, 'an unknown option is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1)', :attempt_id, :token, repeat('k', 201)), 'ZF005', null, 'a key over max_name_bytes is ZF005');
select throws_ok(format('select pgflight.wait_timer(null, %s, %L, 1)', :token, 'k'), '22023', null, 'a NULL attempt id is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1)', :attempt_id + 1000, :token, 'k'), 'ZF003', null, 'an unknown attempt is ZF003');
select outcome from pgflight.wait_event(:attempt_id, :token, 'e', 'order.paid', '42', '{"timeout_s": 0}');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1)', :attempt_id, :token, 'e'), '22023', null, 'a key of an event wait is 22023');
select is((select count(*) from pgflight.waits w where w.step_id = :step_id and w.kind = 'timer'), 0::bigint, 'no timer was written');

select * from finish();
rollback;
