-- metrics_snapshot: transition counts cover the events after the caller's cursor only, at most
-- p_max_events of them, and the cursor comes back; live gauges by workspace and recipe.
begin;
\ir ../_helpers.psql
select plan(6);

select pgflight.submit_run('test', 'r', '{}');
select attempt_id, token from pgflight_test.take(:w1, 'r') \gset
select pgflight.complete_step(:attempt_id, :token);
select pgflight.submit_run('test', 'r', '{}');
-- the window's ids: the events rows' and the claims and successes the attempts record; a submit's
-- queued (step_attempts.queue_event_id) counts as no kind and is outside the window
select min(id) as first, max(id) as last from pgflight.run_events
 where id not in (select a.queue_event_id from pgflight.step_attempts a where a.queue_event_id is not null) \gset

select is((select value from pgflight.metrics_snapshot(0) where metric = 'events_delta' and labels ->> 'kind' = 'completions'),
  1::float8, 'one completion since the beginning');
select is((select value from pgflight.metrics_snapshot(0) where metric = 'events_cursor'), :last::float8,
  'the cursor is the last event counted');
select is((select value from pgflight.metrics_snapshot(:last) where metric = 'events_delta' and labels ->> 'kind' = 'completions'),
  0::float8, 'nothing after the cursor');
select is((select value from pgflight.metrics_snapshot(0, 1) where metric = 'events_cursor'), :first::float8,
  'at most max_events per call, starting at the oldest event');
select is((select value from pgflight.metrics_snapshot() where metric = 'queue_ready' and labels = '{"workspace": "test", "recipe": "r"}'),
  1::float8, 'one ready attempt of recipe r');
select throws_ok($$select pgflight.metrics_snapshot(0, 0)$$, '22023', null, 'max_events below 1');

select * from finish();
rollback;
