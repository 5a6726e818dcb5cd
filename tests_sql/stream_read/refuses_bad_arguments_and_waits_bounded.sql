-- stream_read refuses bad arguments (22023), answers ZF003 for an unknown run, no row for a
-- channel never written, and waits at most wait_s when nothing is there.
begin;
\ir ../_helpers.psql
select plan(12);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok($$select * from pgflight.stream_read(null, 't')$$, '22023', null, 'a NULL run is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, null)', :run_id), '22023', null, 'a NULL channel is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, %L)', :run_id, ''), '22023', null, 'a blank channel is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, %L, -1)', :run_id, 't'), '22023', null, 'a negative after_seq is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, %L, 0, 0)', :run_id, 't'), '22023', null, 'a limit of 0 is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, %L, 0, 10001)', :run_id, 't'), '22023', null, 'a limit over 10,000 is 22023');
select throws_ok(format('select * from pgflight.stream_read(%s, %L, 0, 10, 61)', :run_id, 't'), '22023', null, 'a wait over 60 s is 22023');
select throws_ok($$select * from pgflight.stream_read(-5, 't')$$, 'ZF003', 'unknown run -5', 'an unknown run is ZF003');
select is_empty(format('select * from pgflight.stream_read(%s, %L)', :run_id, 'never'), 'a channel never written is no row');
select throws_ok($$select * from pgflight.stream_channels(null)$$, '22023', null, 'stream_channels: a NULL run is 22023');
select throws_ok($$select * from pgflight.stream_channels(-5)$$, 'ZF003', 'unknown run -5', 'stream_channels: an unknown run is ZF003');
select cmp_ok((select extract(epoch from clock_timestamp() - t) from (select clock_timestamp() t,
                 (select count(*) from pgflight.stream_read(:run_id, 'never', 0, 10, 0.2)) n) x),
              '>=', 0.19::numeric, 'with nothing to read it waits wait_s');

select * from finish();
rollback;
