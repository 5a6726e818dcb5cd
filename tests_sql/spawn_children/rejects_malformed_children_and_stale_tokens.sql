-- spawn_children refuses a malformed plan (22023), a child input over the cap (ZF005), and a
-- caller without the lease (ZF001), creating nothing.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id as root, attempt_id as root_a, token as root_t from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.spawn_children(%s, %s, null)', :root_a, :root_t), '22023', null, 'NULL children are 22023');
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t, '{"key": "a"}'), '22023', null,
                 'an object instead of an array is 22023');
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t, '[{"key": "a"}]'), '22023', null,
                 'a child without a recipe is 22023');
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t, '[{"key": " ", "recipe": "x"}]'), '22023', null,
                 'a blank key is 22023');
update pgflight.settings set max_input_bytes = 50;
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t,
                        jsonb_build_array(jsonb_build_object('key', 'a', 'recipe', 'x', 'input', jsonb_build_object('t', repeat('x', 100))))),
                 'ZF005', null, 'a child input over the cap is ZF005');
select throws_ok(format('select pgflight.spawn_children(%s, %s, %L)', :root_a, :root_t - 1, pgflight_test.children(1)), 'ZF001', null,
                 'a stale token is ZF001');
select is((select count(*) from pgflight.steps where parent_id = :root), 0::bigint, 'no child was created');

select * from finish();
rollback;
