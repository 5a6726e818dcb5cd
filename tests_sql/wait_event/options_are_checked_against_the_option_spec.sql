-- The options of wait_timer, wait_event and emit_event are in the option catalogue
-- (_option_spec, the source of docs/options.md) and checked by _check_options like every other
-- function's: an unknown key or a value out of its bounds is 22023 naming the key and listing
-- the known options; JSON null is the same as leaving the key out.
begin;
\ir ../_helpers.psql
select plan(6);

select results_eq($$select scope || '.' || key || ':' || kind from pgflight._option_spec()
                     where scope in ('wait_timer', 'wait_event', 'emit_event') order by 1$$,
  $$values ('emit_event.event_id:string'), ('wait_event.default:json'), ('wait_event.timeout_s:number')$$,
  'the wait options are in the catalogue');
select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"ttl": 1}'),
  '22023', 'unknown option ttl for wait_event', 'an unknown key is named');
select throws_ok(format('select pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"timeout_s": "soon"}'),
  '22023', null, 'a timeout that is not a number is 22023');
select throws_ok(format('select pgflight.wait_timer(%s, %s, %L, 1, %L)', :attempt_id, :token, 't', '{"timeout_s": 1}'),
  '22023', 'unknown option timeout_s for wait_timer', 'wait_timer takes no option');
select throws_ok($$select pgflight.emit_event('test', 'n', 'k', null, '{"event_id": ""}')$$,
  '22023', null, 'an empty event id is 22023');
select results_eq(format('select waiting from pgflight.wait_event(%s, %s, %L, %L, %L, %L)', :attempt_id, :token, 'w', 'n', 'k', '{"timeout_s": null, "default": null}'),
  $$values (true)$$, 'null options are left out: a wait without a timeout parks');

select * from finish();
rollback;
