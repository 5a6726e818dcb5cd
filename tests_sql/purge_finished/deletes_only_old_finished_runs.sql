-- purge_finished deletes runs finished longer ago than the retention, with their steps and
-- attempts, and leaves running and recent runs. Their events rows stay in the day-partitioned log
-- until maintain_partitions drops the day (settings.events_keep_s, docs/retention.md).
begin;
\ir ../_helpers.psql
select plan(5);

select run_id as old_run, step_id as old_step, attempt_id as a, token as t from pgflight_test.hold(:w1) \gset
select pgflight.complete_step(:a, :t) \gset
set local pgflight.fake_now = '2030-01-01 01:00:00+00';
select run_id as recent_run, attempt_id as a, token as t from pgflight_test.hold(:w1) \gset
select pgflight.complete_step(:a, :t) \gset
select run_id as live_run from pgflight.submit_run('test', 'r', '{}') \gset

set local pgflight.fake_now = '2030-01-01 01:30:00+00';
select is(pgflight.purge_finished(3600), 1, 'one run finished more than an hour ago is purged');
select is((select count(*) from pgflight.runs where id in (:recent_run, :live_run)), 2::bigint, 'the recent and the running run stay');
select is((select count(*) from pgflight.steps where run_id = :old_run), 0::bigint, 'its steps are gone');
select is((select count(*) from pgflight.step_attempts where run_id = :old_run), 0::bigint, 'its attempts are gone');
select is(pgflight.purge_finished(3600), 0, 'purging again deletes nothing');

select * from finish();
rollback;
