-- run_list_page: newest first, keyset after a run id, a live-state filter from the live attempts,
-- and 22023 for a bad limit, an unknown filter key, an unknown status or a bad timestamp.
begin;
\ir ../_helpers.psql
select plan(8);

select run_id as r1 from pgflight.submit_run('test', 'a', '{}') \gset
select run_id as r2 from pgflight.submit_run('test', 'b', '{}', '{"idempotency_key": "k-2"}') \gset
select run_id as r3, step_id as s3 from pgflight.submit_run('test', 'a', '{}') \gset
select pgflight_test.take(:w1, 'b');

select results_eq('select run_id from pgflight.run_list_page(null, 2)', format('values (%s::bigint), (%s)', :r3, :r2),
  'newest first, at most the limit');
select results_eq(format('select run_id from pgflight.run_list_page(%s, 2)', :r2), format('values (%s::bigint)', :r1),
  'the next page starts after the last run id');
select results_eq($$select run_id, state from pgflight.run_list_page(null, 10, '{"status": "running"}')$$,
  format('values (%s::bigint, %L::text)', :r2, 'running'), 'a leased root is running');
select results_eq($$select run_id from pgflight.run_list_page(null, 10, '{"status": "queued", "recipe": "a"}')$$,
  format('values (%s::bigint), (%s)', :r3, :r1), 'queued runs of recipe a');
select results_eq($$select run_id from pgflight.run_list_page(null, 10, '{"key": "k-"}')$$,
  format('values (%s::bigint)', :r2), 'idempotency key by prefix');
select throws_ok($$select pgflight.run_list_page(null, 0)$$, '22023', null, 'limit below 1');
select throws_ok($$select pgflight.run_list_page(null, 10, '{"colour": "red"}')$$, '22023', 'unknown filter ''colour''', 'unknown filter');
select throws_ok($$select pgflight.run_list_page(null, 10, '{"since": "yesterday-ish"}')$$, '22023', null, 'bad timestamp');

select * from finish();
rollback;
