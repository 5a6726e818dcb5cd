-- When an attempt is reclaimed mid-stream, the chunks it wrote stay, marked with attempt 1; its
-- late writes are refused (ZF001); the next attempt's chunks follow with higher numbers, marked
-- with attempt 2, so a reader sees attempt 1's then attempt 2's.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{"lease_s": 10}', 10) \gset
select pgflight.stream_write(:attempt_id, :token, 'tokens', '{a1,a2}');
set local pgflight.fake_now = '2030-01-01 00:00:11+00';
select is(pgflight.reclaim_expired(), 1, 'the lapsed lease is reclaimed');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 'tokens', '{late}'),
                 'ZF001', null, 'the reclaimed attempt''s late write is refused');
set local pgflight.fake_now = '2030-01-01 00:00:20+00';
select attempt_id as a2, token as t2 from pgflight_test.take(:w2, 'r') \gset
select results_eq(format('select first_seq, last_seq from pgflight.stream_write(%s, %s, %L, %L)', :a2, :t2, 'tokens', '{b1,b2}'),
                  $$values (3::bigint, 4::bigint)$$, 'the next attempt goes on from seq 3');
select results_eq(format('select seq, attempt_no, chunk from pgflight.stream_read(%s, %L)', :run_id, 'tokens'),
                  $$values (1::bigint, 1, 'a1'::text), (2, 1, 'a2'), (3, 2, 'b1'), (4, 2, 'b2')$$,
                  'a reader sees attempt 1''s chunks, then attempt 2''s, each marked');
select isnt(:a2::bigint, :attempt_id::bigint, 'a new attempt wrote them');

select * from finish();
rollback;
