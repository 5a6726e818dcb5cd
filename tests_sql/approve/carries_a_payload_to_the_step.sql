-- approve's payload is stored with the first decision and handed to the step that asked
-- (request_approval's payload column); the same decision again keeps the first payload. A tool
-- gate (tool:<id>) takes only {"arguments": {...}} on approve or {"message": "..."}; a payload
-- over max_approval_request_bytes is ZF005.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select payload, waiting from pgflight.request_approval(%s, %s, %L, %L)', :attempt_id, :token, 'ship', '{"to": "x"}'),
                  $$values (null::jsonb, true)$$, 'no decision yet: waiting, no payload');
select results_eq(format('select applied from pgflight.approve(%s, %L, %L, %L, %L, %L)', :step_id, 'approve', 'alice', 'use the depot',
                         'ship', '{"to": "depot", "n": 2}'),
                  $$values (true)$$, 'approve with a payload applies the decision');
select results_eq(format('select applied from pgflight.approve(%s, %L, %L, null, %L, %L)', :step_id, 'approve', 'bob', 'ship', '{"to": "elsewhere"}'),
                  $$values (false)$$, 'the same decision again with another payload applies nothing');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2) \gset
select results_eq(format('select decision, payload, waiting from pgflight.request_approval(%s, %s, %L)', :a2, :t2, 'ship'),
                  $$values ('approve', '{"to": "depot", "n": 2}'::jsonb, false)$$,
                  'the step asking again receives the first decider''s payload');

select run_id as r2, step_id as s2 from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.approve(%s, %L, %L, null, %L, %L)', :s2, 'approve', 'x', 'tool:t1', '{"args": {}}'),
                 '22023', null, 'a tool gate refuses a payload that is neither arguments nor a message');
select throws_ok(format('select pgflight.approve(%s, %L, %L, null, %L, %L)', :s2, 'reject', 'x', 'tool:t1', '{"arguments": {"a": 1}}'),
                 '22023', null, 'a tool gate refuses edited arguments with a rejection');
select throws_ok(format('select pgflight.approve(%s, %L, %L, null, %L, %L)', :s2, 'approve', 'x', 'tool:t1', '{"arguments": [1]}'),
                 '22023', null, 'a tool gate refuses arguments that are not an object');
select results_eq(format('select applied from pgflight.approve(%s, %L, %L, null, %L, %L)', :s2, 'reject', 'x', 'tool:t1', '{"message": "use the sandbox"}'),
                  $$values (true)$$, 'a tool gate takes a message for the model');
update pgflight.settings set max_approval_request_bytes = 10;
select throws_ok(format('select pgflight.approve(%s, %L, %L, null, %L, %L)', :s2, 'approve', 'x', 'other', '{"text": "far too long"}'),
                 'ZF005', null, 'a payload over max_approval_request_bytes is ZF005');

select * from finish();
rollback;
