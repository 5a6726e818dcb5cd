-- A fan-out of 1,000 children counts them on 15 stripes (1,000 / 64) beside the
-- parent's row; the parent's children_pending counts the allotment of every stripe not yet dry,
-- so it stays 1,000 until a stripe runs dry and reaches zero with the last child, once. A
-- fan-out under 128 children (here a second wave of the woken parent) keeps its count on the
-- parent's row alone.
begin;
\ir ../_helpers.psql
select plan(12);

select run_id, root, root_a, root_t from pgflight_test.parked_parent(:w1, pgflight_test.children(1000)) \gset
select results_eq(format('select count(*)::integer, sum(allotted)::integer, sum(pending)::integer, min(allotted), max(allotted) from pgflight.fan_in_stripes where parent_id = %s', :root),
                  $$values (15, 1000, 1000, 66, 67)$$, '15 stripes of 66 or 67 children');
select is((select children_pending from pgflight.steps where id = :root), 1000, 'the parent counts all 1,000');

-- 60 children in one batch: taken from one stripe, which does not run dry
create temp table held as select * from pgflight.claim_batch(:w1, 60, 30, array['child']);
select is((select count(*) from pgflight.complete_batch((select array_agg(attempt_id) from held), (select array_agg(fencing_token) from held),
                                                        array_fill(null::jsonb, array[60])) where outcome = 'succeeded'),
          60::bigint, '60 children completed in one batch');
select results_eq(format('select count(*)::integer from pgflight.fan_in_stripes where parent_id = %s and pending < allotted', :root),
                  $$values (1)$$, 'one stripe paid for the whole batch');
select is((select sum(pending)::integer from pgflight.fan_in_stripes where parent_id = :root), 940,
          'the stripes count the 940 children left');
select is((select children_pending from pgflight.steps where id = :root), 1000, 'no stripe ran dry: the parent''s row untouched');

-- the rest, in batches of 100: the parent's counter falls stripe by stripe and wakes once
create function pg_temp.drain(p_worker bigint) returns integer language plpgsql as $$
declare v_n integer := 0; v_got integer;
begin
  loop
    drop table if exists pg_temp.b;
    create temp table b as select * from pgflight.claim_batch(p_worker, 100, 30, array['child']);
    select count(*) into v_got from b;
    exit when v_got = 0;
    perform pgflight.complete_batch((select array_agg(attempt_id) from b), (select array_agg(fencing_token) from b),
                                    array_fill(null::jsonb, array[v_got]));
    v_n := v_n + v_got;
  end loop;
  return v_n;
end $$;
select is(pg_temp.drain(:w1), 940, 'the other 940 children completed');
select is(pgflight_test.status(:root), 'queued', 'the parent is woken');
select is(pgflight_test.events(:run_id, :root, 'parent_resumed'), 1::bigint, 'exactly one parent_resumed event');
select is((select count(*) from pgflight.fan_in_stripes where parent_id = :root), 0::bigint, 'its stripes are gone');

-- the woken parent spawns a second wave of 127: counted on its row alone
select attempt_id as again_a, token as again_t from pgflight_test.take(:w1, 'r') \gset
select results_eq(format('select created, parked from pgflight.spawn_children(%s, %s, %L)', :again_a, :again_t,
                         (select jsonb_agg(jsonb_build_object('key', 's' || g, 'recipe', 'small')) from generate_series(1, 127) g)),
                  $$values (127, true)$$, 'a second wave of 127 parks the parent again');
select is((select count(*) from pgflight.fan_in_stripes where parent_id = :root), 0::bigint, '127 children: no stripes');

select * from finish();
rollback;
