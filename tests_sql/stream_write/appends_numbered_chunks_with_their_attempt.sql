-- stream_write appends a batch of chunks in order, numbered 1, 2, ... per run and channel, each
-- naming the attempt that wrote it; another channel has its own numbers; an empty batch writes
-- nothing and answers the last number; the stream row counts the bytes.
begin;
\ir ../_helpers.psql
select plan(9);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select first_seq, last_seq, total_bytes from pgflight.stream_write(%s, %s, %L, %L)',
                         :attempt_id, :token, 'tokens', '{Hel,lo,", wörld"}'),
                  $$values (1::bigint, 3::bigint, 13::bigint)$$, 'three chunks get 1..3; the bytes are UTF-8 bytes');
select results_eq(format('select first_seq, last_seq from pgflight.stream_write(%s, %s, %L, %L)',
                         :attempt_id, :token, 'tokens', '{!}'),
                  $$values (4::bigint, 4::bigint)$$, 'the next batch goes on from 4');
select results_eq(format('select first_seq, last_seq from pgflight.stream_write(%s, %s, %L, %L)',
                         :attempt_id, :token, 'progress', '{"{\"done\": 1}"}'),
                  $$values (1::bigint, 1::bigint)$$, 'another channel numbers from 1');
select results_eq(format('select first_seq, last_seq from pgflight.stream_write(%s, %s, %L, %L)',
                         :attempt_id, :token, 'tokens', '{}'),
                  $$values (null::bigint, 4::bigint)$$, 'an empty batch writes nothing and answers the last seq');
select results_eq(format('select seq, chunk, attempt_id, attempt_no, step_id from pgflight.stream_chunks '
                         'where run_id = %s and channel = %L order by seq', :run_id, 'tokens'),
                  format('values (1::bigint, %L::text, %s::bigint, 1, %s::bigint), (2, %L, %s, 1, %s), (3, %L, %s, 1, %s), (4, %L, %s, 1, %s)',
                         'Hel', :attempt_id, :step_id, 'lo', :attempt_id, :step_id, ', wörld', :attempt_id, :step_id,
                         '!', :attempt_id, :step_id),
                  'the chunks are stored in order with the attempt, its number and the step');
select is((select total_bytes from pgflight.streams where run_id = :run_id and channel = 'tokens'), 14::bigint,
          'the stream row counts every byte written');
select results_eq(format('select seq, chunk from pgflight.stream_read(%s, %L, 2)', :run_id, 'tokens'),
                  $$values (3::bigint, ', wörld'::text), (4, '!')$$, 'stream_read returns the chunks after seq 2');
select results_eq(format('select seq from pgflight.stream_read(%s, %L, 0, 2)', :run_id, 'tokens'),
                  $$values (1::bigint), (2)$$, 'at most limit chunks, from the first');

select results_eq(format('select channel, last_seq, total_bytes from pgflight.stream_channels(%s)', :run_id),
                  $$values ('progress'::text, 1::bigint, 11::bigint), ('tokens', 4, 14)$$,
                  'stream_channels lists the run''s streams by channel');

select * from finish();
rollback;
