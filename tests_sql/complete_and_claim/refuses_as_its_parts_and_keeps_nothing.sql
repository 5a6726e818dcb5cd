-- complete_and_claim raises the errors of its two parts by SQLSTATE (claim_batch's 22023 and
-- ZF010, complete_batch's 22023), and is one transaction: when either part raises, nothing of
-- the other is kept (the held attempt still running, the queued step still queued).
begin;
\ir ../_helpers.psql
select plan(8);

select step_id as held_step, attempt_id as held_a, token as held_t from pgflight_test.hold(:w1) \gset
select step_id as q_step from pgflight.submit_run('test', 'r', '{}') \gset

select throws_ok(format('select * from pgflight.complete_and_claim(%s, array[%s]::bigint[], array[%s]::bigint[], array[%L]::jsonb[], 4, 30)',
                        -1, :held_a, :held_t, '{}'),
                 'ZF010', null, 'an unknown worker is ZF010');
select is(pgflight_test.status(:held_step), 'running', 'after ZF010 the held attempt is not completed');
select throws_ok(format('select * from pgflight.complete_and_claim(%s, array[%s]::bigint[], array[%s]::bigint[], array[%L]::jsonb[], 0, 30)',
                        :w1, :held_a, :held_t, '{}'),
                 '22023', null, 'batch size 0 is 22023');
select throws_ok(format('select * from pgflight.complete_and_claim(%s, array[%s]::bigint[], array[%s]::bigint[], array[%L]::jsonb[], 4, 0)',
                        :w1, :held_a, :held_t, '{}'),
                 '22023', null, 'lease 0 is 22023');
select throws_ok(format('select * from pgflight.complete_and_claim(%s, array[%s]::bigint[], array[]::bigint[], array[%L]::jsonb[], 4, 30)',
                        :w1, :held_a, '{}'),
                 '22023', null, 'arrays of different lengths are 22023');
select is(pgflight_test.status(:q_step), 'queued', 'after the completion''s 22023 the claim is undone');
select is(pgflight_test.status(:held_step), 'running', 'and the held attempt is not completed');

update pgflight.workers set stopped_at = pgflight._now() where id = :w1;
select throws_ok(format('select * from pgflight.complete_and_claim(%s, array[%s]::bigint[], array[%s]::bigint[], array[%L]::jsonb[], 4, 30)',
                        :w1, :held_a, :held_t, '{}'),
                 'ZF010', null, 'a stopped worker is ZF010');

select * from finish();
rollback;
