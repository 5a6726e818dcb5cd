-- set_workspace_limits refuses unknown keys and out-of-range values with 22023, and a null
-- value removes a limit.
begin;
\ir ../_helpers.psql
select plan(6);

select throws_ok($$select pgflight.set_workspace_limits('test', '{"max_inflight": 3}')$$, '22023', 'unknown option max_inflight');
select throws_ok($$select pgflight.set_workspace_limits('test', '{"max_in_flight": -1}')$$, '22023', 'option max_in_flight is out of range');
select throws_ok($$select pgflight.set_workspace_limits('test', '{"share": 2.5}')$$, '22023', 'option share is out of range');
select throws_ok($$select pgflight.set_workspace_limits('nope', '{}')$$, 'ZF003', 'unknown workspace ''nope''');
select is((select max_in_flight from pgflight.set_workspace_limits('test', '{"max_in_flight": 3, "starts_per_s": 4}')), 3,
          'a cap is set');
select is((select row(max_in_flight, starts_per_s, burst)::text
             from pgflight.set_workspace_limits('test', '{"max_in_flight": null}')), '(,4,4)',
          'null removes the cap, the rate stays with its default burst');

select * from finish();
rollback;
