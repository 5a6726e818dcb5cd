-- heartbeat renews, in one call, only the leases the worker holds with the right token
-- (invariant 3); it says 'cancelled' for a cancel request and 'lease_lost' for anything else; array
-- lengths must match (22023).
begin;
\ir ../_helpers.psql
select plan(9);

select step_id as mine_step, attempt_id as mine, token as mine_t from pgflight_test.hold(:w1) \gset
select attempt_id as theirs, token as theirs_t from pgflight_test.hold(:w2) \gset
select run_id as cx_run, attempt_id as cx, token as cx_t from pgflight_test.hold(:w1) \gset
select pgflight.cancel_run(:cx_run) \gset

set local pgflight.fake_now = '2030-01-01 00:00:10+00';
create temp table hb on commit drop as
  select * from pgflight.heartbeat(:w1, array[:mine, :theirs, :cx, :mine]::bigint[], array[:mine_t, :theirs_t, :cx_t, :mine_t + 1000]::bigint[]);
select results_eq(format('select status, lease_expires_at from hb where attempt_id = %s and lease_expires_at is not null', :mine),
                  $$values ('held', '2030-01-01 00:00:40+00'::timestamptz)$$, 'its own lease is renewed by the stored lease_s');
select is((select lease_expires_at from pgflight.step_attempts where id = :mine), '2030-01-01 00:00:40+00'::timestamptz, 'and stored');
select is((select status from hb where attempt_id = :theirs), 'lease_lost', 'another worker''s attempt is reported lost');
select is((select lease_expires_at from pgflight.step_attempts where id = :theirs), '2030-01-01 00:00:30+00'::timestamptz,
          'and its lease is not renewed');
select is((select status from hb where attempt_id = :cx), 'cancelled', 'a cancel request is reported as cancelled');
select is((select count(*) from hb where attempt_id = :mine and status = 'lease_lost'), 1::bigint, 'a wrong token for its own attempt is lost');
select is((select count(*) from pgflight.heartbeat(:w1, '{}', '{}')), 0::bigint, 'empty arrays give no rows');
select throws_ok(format('select pgflight.heartbeat(%s, array[1, 2]::bigint[], array[1]::bigint[])', :w1), '22023', null,
                 'arrays of different lengths are 22023');
select is(pgflight_test.status(:mine_step), 'running', 'heartbeat does not change the status');

select * from finish();
rollback;
