-- submit_runs: one run, root step, queued attempt and 'queued' event per element, in element
-- order, element options over the shared ones; keys honoured against the database and inside the
-- call; one bad element (22023 / ZF004 / ZF005 naming it) refuses the call and writes nothing;
-- settings.max_runs_per_call caps a call.
begin;
\ir ../_helpers.psql
select plan(13);

select run_id as old_run from pgflight.submit_run('test', 'r', '{"x": 0}', '{"idempotency_key": "old"}') \gset

create temp table got as
select * from pgflight.submit_runs('test', $$[
  {"recipe": "r", "input": {"x": 1}},
  {"recipe": "s", "input": {"x": 2}, "options": {"priority": 9, "idempotency_key": "k"}},
  {"recipe": "s", "input": {"x": 2}, "options": {"idempotency_key": "k"}},
  {"recipe": "r", "input": {"x": 0}, "options": {"idempotency_key": "old"}},
  {"recipe": "r", "options": {"delay_s": 60}}
]$$, '{"priority": 3, "max_attempts": 2}');

select results_eq('select idx, created from got order by idx',
                  $$values (1, true), (2, true), (3, false), (4, false), (5, true)$$,
                  'one row per element, in order; a repeated or existing key creates nothing');
select is((select run_id from got where idx = 3), (select run_id from got where idx = 2),
          'the later element of a key gets the run of the first');
select is((select r.id from pgflight.runs r where r.idempotency_key = 'old'), (select run_id from got where idx = 4),
          'an existing key gives its run');
select results_eq($$select s.priority, s.max_attempts from got g join pgflight.steps s on s.id = g.step_id where g.created order by g.idx$$,
                  $$values (3, 2), (9, 2), (3, 2)$$, 'the element''s options lie over the shared ones');
select is((select count(*) from got g join pgflight.run_events e on e.attempt_id = g.attempt_id
            where g.created and e.to_status = 'queued' and e.reason = 'queued'), 3::bigint, 'a queued event per new run');
select is((select a.available_after from pgflight.step_attempts a join got g on g.attempt_id = a.id where g.idx = 5),
          '2030-01-01 00:01:00+00'::timestamptz, 'delay_s counts on the engine''s clock');
select is((select count(*) from pgflight.step_attempts a join got g on g.attempt_id = a.id
            where a.status = 'queued' and a.attempt_no = 1 and a.workspace_id = :ws), 5::bigint,
          'every row names a queued first attempt in the workspace');

create temp table before as select (select count(*) from pgflight.runs) runs, (select count(*) from pgflight.step_attempts) attempts;
select throws_like($$select pgflight.submit_runs('test', '[{"recipe": "r"}, {"recipe": "r", "options": {"lease_s": 0}}]')$$,
                   'submit_runs element 2: option lease_s%', 'a bad option names the element and the key');
select throws_ok($$select pgflight.submit_runs('test', '[{"recipe": "r"}, {"recipe": "r", "input": {"x": 9}, "options": {"idempotency_key": "old"}}]')$$,
                 'ZF004', null, 'an existing key with another input is ZF004');
select throws_ok($$select pgflight.submit_runs('test', '[{"recipe": "r", "options": {"idempotency_key": "n"}}, {"recipe": "r", "input": {"y": 1}, "options": {"idempotency_key": "n"}}]')$$,
                 'ZF004', null, 'two elements of one key with different inputs are ZF004');
update pgflight.settings set max_runs_per_call = 2;
select throws_like($$select pgflight.submit_runs('test', '[{"recipe": "r"}, {"recipe": "r"}, {"recipe": "r"}]')$$,
                   '%max_runs_per_call%', 'more runs than max_runs_per_call is refused');
select throws_ok($$select pgflight.submit_runs('test', '{"recipe": "r"}')$$, '22023', null, 'runs must be an array');
select results_eq('select (select count(*) from pgflight.runs), (select count(*) from pgflight.step_attempts)',
                  'select runs, attempts from before', 'the refused calls wrote nothing');

select * from finish();
rollback;
