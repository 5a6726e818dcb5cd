-- submit_run argument checks: NULL input, blank recipe, malformed options are 22023; an input
-- over settings.max_input_bytes is ZF005. A refused submit creates nothing.
begin;
\ir ../_helpers.psql
select plan(13);

select throws_ok($$select pgflight.submit_run('test', 'r', null)$$, '22023', null, 'a NULL input is refused');
select throws_ok($$select pgflight.submit_run('test', null, '{}')$$, '22023', null, 'a NULL recipe is refused');
select throws_ok($$select pgflight.submit_run('test', ' ', '{}')$$, '22023', null, 'a blank recipe is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '[1]')$$, '22023', null, 'options that are not an object are refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"max_attempts": 0}')$$, '22023', null, 'max_attempts 0 is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"max_attempts": 1.5}')$$, '22023', null, 'a fractional max_attempts is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"priority": "high"}')$$, '22023', null, 'a non-numeric priority is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"lease_s": 0}')$$, '22023', null, 'lease_s 0 is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"max_runtime_s": -1}')$$, '22023', null, 'a negative max_runtime_s is refused');
select throws_ok($$select pgflight.submit_run('test', 'r', '{}', '{"backoff": 5}')$$, '22023', null, 'a backoff that is not an object is refused');

update pgflight.settings set max_input_bytes = 100;
select throws_ok(format('select pgflight.submit_run(%L, %L, %L)', 'test', 'r', jsonb_build_object('text', repeat('x', 200))),
                 'ZF005', null, 'an input over max_input_bytes is ZF005');
select lives_ok(format('select pgflight.submit_run(%L, %L, %L)', 'test', 'r', jsonb_build_object('text', repeat('x', 50))),
                'an input under the cap is accepted');
select is((select count(*) from pgflight.runs r join pgflight.workspaces w on w.id = r.workspace_id where w.name = 'test'),
          1::bigint, 'only the accepted submit created a run');

select * from finish();
rollback;
