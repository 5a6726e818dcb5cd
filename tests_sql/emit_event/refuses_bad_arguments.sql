-- emit_event refuses bad arguments: 22023 for NULL or blank names and bad options, ZF003 for an
-- unknown workspace, ZF005 for names and payloads over their caps; nothing is written.
begin;
\ir ../_helpers.psql
select plan(9);

select throws_ok($$select pgflight.emit_event(null, 'n', 'k')$$, '22023', null, 'a NULL workspace is 22023');
select throws_ok($$select pgflight.emit_event('test', null, 'k')$$, '22023', null, 'a NULL name is 22023');
select throws_ok($$select pgflight.emit_event('test', ' ', 'k')$$, '22023', null, 'a blank name is 22023');
select throws_ok($$select pgflight.emit_event('test', 'n', null)$$, '22023', null, 'a NULL key is 22023');
select throws_ok($$select pgflight.emit_event('nope', 'n', 'k')$$, 'ZF003', null, 'an unknown workspace is ZF003');
select throws_ok($$select pgflight.emit_event('test', 'n', 'k', null, '{"event_id": ""}')$$, '22023', null, 'an empty event id is 22023');
select throws_ok($$select pgflight.emit_event('test', 'n', repeat('k', 201))$$, 'ZF005', null, 'a key over max_name_bytes is ZF005');
update pgflight.settings set max_event_payload_bytes = 10;
select throws_ok($$select pgflight.emit_event('test', 'n', 'k', '"0123456789abcdef"')$$, 'ZF005', null, 'a payload over max_event_payload_bytes is ZF005');
select is((select count(*) from pgflight.emitted_events), 0::bigint, 'nothing was written');

select * from finish();
rollback;
