-- expire_approvals: one expired gate whose decision raises is skipped with a warning
-- and stays undecided; the other expired gates of the same pass are decided; the next pass, with
-- the fault gone, decides it.
begin;
\ir ../_helpers.psql
set local client_min_messages = error;  -- the skipped row's WARNING is expected
select plan(5);

select run_id as r1, step_id as s1, attempt_id as a1, token as t1 from pgflight_test.hold(:w1) \gset
select pgflight.request_approval(:a1, :t1, 'gate', null, '{"expires_in_s": 60, "default_decision": "approve"}');
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w1) \gset
select pgflight.request_approval(:a2, :t2, 'gate', null, '{"expires_in_s": 60, "default_decision": "approve"}');
select run_id as r3, step_id as s3, attempt_id as a3, token as t3 from pgflight_test.hold(:w1) \gset
select pgflight.request_approval(:a3, :t3, 'gate', null, '{"expires_in_s": 60, "default_decision": "reject"}');

-- a fault only the second gate meets when it is decided
create function pgflight_test.boom() returns trigger language plpgsql as $$
begin
  if new.step_id = current_setting('pgflight_test.poison')::bigint and new.decision is not null then
    raise exception 'disk quota of gate %', new.id;
  end if;
  return new;
end $$;
select set_config('pgflight_test.poison', :'s2', true);
create trigger boom before update on pgflight.approvals for each row execute function pgflight_test.boom();

set local pgflight.fake_now = '2030-01-01 00:01:01+00';
select is(pgflight.expire_approvals(), 2, 'the pass decides the two gates that do not raise');
select results_eq(format('select step_id, decision from pgflight.approvals where step_id in (%s, %s, %s) order by step_id',
                         :s1, :s2, :s3),
                  format('values (%s::bigint, %L::text), (%s, null), (%s, %L)', :s1, 'approve', :s2, :s3, 'reject'),
                  'the raising gate stays undecided, its neighbours got their default decisions');
select is(pgflight_test.status(:s1), 'queued', 'an approved neighbour is requeued');

drop trigger boom on pgflight.approvals;
select is(pgflight.expire_approvals(), 1, 'the next pass decides the gate that raised');
select is((select decision from pgflight.approvals where step_id = :s2), 'approve', 'with its default decision');

select * from finish();
rollback;
