-- stream_write refuses bad arguments with 22023 and sizes over the stream caps with ZF005 naming
-- the setting; a stale or NULL token is refused by the fence (ZF001, 22023); nothing is written.
begin;
\ir ../_helpers.psql
select plan(14);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.stream_write(%s, null, %L, %L)', :attempt_id, 't', '{a}'), '22023', null,
                 'a NULL token is 22023');
select throws_ok(format('select pgflight.stream_write(null, %s, %L, %L)', :token, 't', '{a}'), '22023', null,
                 'a NULL attempt id is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token + 1, 't', '{a}'), 'ZF001', null,
                 'another token is lease lost (ZF001)');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', -1, 1, 't', '{a}'), 'ZF003', null,
                 'an unknown attempt is ZF003');
select throws_ok(format('select pgflight.stream_write(%s, %s, null, %L)', :attempt_id, :token, '{a}'), '22023', null,
                 'a NULL channel is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, ' ', '{a}'), '22023', null,
                 'a blank channel is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, null)', :attempt_id, :token, 't'), '22023', null,
                 'NULL chunks is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 't', '{a,NULL}'), '22023',
                 null, 'a NULL chunk is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L, %L)', :attempt_id, :token, 't', '{a}', '{"x": 1}'),
                 '22023', null, 'an unknown option is 22023');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, repeat('c', 201), '{a}'),
                 'ZF005', 'stream channel (bytes) over the cap settings.max_name_bytes', 'a channel over max_name_bytes is ZF005');
update pgflight.settings set max_stream_chunks_per_call = 2, max_stream_chunk_bytes = 4, max_stream_bytes = 6;
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 't', '{a,b,c}'), 'ZF005',
                 'chunks of one stream_write call over the cap settings.max_stream_chunks_per_call',
                 'more chunks than max_stream_chunks_per_call is ZF005 naming it');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 't', '{abcde}'), 'ZF005',
                 'stream chunk (bytes) over the cap settings.max_stream_chunk_bytes',
                 'a chunk over max_stream_chunk_bytes is ZF005 naming it');
select lives_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 't', '{abcd}'),
                'four bytes fit');
select throws_ok(format('select pgflight.stream_write(%s, %s, %L, %L)', :attempt_id, :token, 't', '{abc}'), 'ZF005',
                 format('stream t of run %s (bytes, with this call) over the cap settings.max_stream_bytes', :run_id),
                 'a stream past max_stream_bytes is ZF005 naming it, and that batch is not written');

select * from finish();
rollback;
