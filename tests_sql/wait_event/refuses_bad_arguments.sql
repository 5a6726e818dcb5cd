-- wait_event refuses bad arguments with 22023 (NULL or blank names, bad options, a key that names
-- another wait) and ZF005 (names over the cap, a default payload over its cap or too deep).
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.wait_event(%s, %s, null, %L, %L)', :attempt_id, :token, 'n', 'k'), '22023', null, 'a NULL wait key is 22023');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, null, %L)', :attempt_id, :token, 'w', 'k'), '22023', null, 'a NULL event name is 22023');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, null)', :attempt_id, :token, 'w', 'n'), '22023', null, 'a NULL event key is 22023');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"timeout_s": -1}'), '22023', null, 'a negative timeout is 22023');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"ttl": 1}'), '22023', null, 'an unknown option is 22023');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L)', :attempt_id, :token, 'w', 'n', repeat('k', 201)), 'ZF005', null, 'an event key over max_name_bytes is ZF005');
update pgflight.settings set max_event_payload_bytes = 10, max_json_depth = 3;
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"default": "0123456789abcdef"}'), 'ZF005', null, 'a default over max_event_payload_bytes is ZF005');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"default": [[[[1]]]]}'), 'ZF005', null, 'a default nested too deep is ZF005');
select outcome from pgflight.wait_timer(:attempt_id, :token, 't', 0);
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L)', :attempt_id, :token, 't', 'n', 'k'), '22023', null, 'a key of a timer is 22023');

select * from finish();
rollback;
