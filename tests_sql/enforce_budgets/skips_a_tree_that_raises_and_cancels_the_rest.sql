-- enforce_budgets: of two runs over their max_usd, the one whose cancel raises is
-- skipped with a warning (not stamped exceeded); the other is cancelled in the same pass; the
-- next pass, with the fault gone, cancels the first.
begin;
\ir ../_helpers.psql
set local client_min_messages = error;  -- the skipped row's WARNING is expected
select plan(5);

select run_id as r1, step_id as s1, attempt_id as a1, token as t1 from pgflight_test.hold(:w1, 'agent', '{"max_usd": 1}') \gset
select run_id as r2, step_id as s2, attempt_id as a2, token as t2 from pgflight_test.hold(:w1, 'agent', '{"max_usd": 1}') \gset
select pgflight.begin_agent_run(:a1, :t1, '{"model": "claude-haiku-4-5"}');
select pgflight.begin_agent_run(:a2, :t2, '{"model": "claude-haiku-4-5"}');
update pgflight.budgets set spent_usd = 1.2 where run_id in (:r1, :r2) and scope = 'run';

-- a fault only the first run meets when it is cancelled
create function pgflight_test.boom() returns trigger language plpgsql as $$
begin
  if new.id = current_setting('pgflight_test.poison')::bigint and new.status = 'cancelled' then
    raise exception 'disk quota of run %', new.id;
  end if;
  return new;
end $$;
select set_config('pgflight_test.poison', :'r1', true);
create trigger boom before update on pgflight.runs for each row execute function pgflight_test.boom();

select is(pgflight.enforce_budgets(), 1, 'the pass cancels the tree that does not raise');
select results_eq(format('select id, status from pgflight.runs where id in (%s, %s) order by id', :r1, :r2),
                  format('values (%s::bigint, %L::text), (%s, %L)', :r1, 'running', :r2, 'cancelled'),
                  'the raising run is left as it was, its neighbour is cancelled');
select is((select exceeded_at from pgflight.budgets where run_id = :r1 and scope = 'run'), null,
          'the raising run''s budget is not stamped, so a later pass tries it again');

drop trigger boom on pgflight.runs;
select is(pgflight.enforce_budgets(), 1, 'the next pass cancels it');
select is((select status from pgflight.runs where id = :r1), 'cancelled', 'the run is cancelled');

select * from finish();
rollback;
