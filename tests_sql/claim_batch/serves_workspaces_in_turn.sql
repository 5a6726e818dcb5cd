-- claim_batch is fair across workspaces: a workspace with one queued step is served in the first
-- batch even behind another workspace's backlog; priority orders work only inside a workspace.
begin;
\ir ../_helpers.psql
select plan(3);

select pgflight.create_workspace('bulk'), pgflight.create_workspace('quiet');
select count(*) from (select pgflight.submit_run('bulk', 'b', '{}', '{"priority": 100}') from generate_series(1, 50)) s;
select attempt_id as quiet from pgflight.submit_run('quiet', 'q', '{}') \gset

select ok(:quiet in (select attempt_id from pgflight.claim_batch(:w1, 2, 30)),
          'the quiet workspace is served in the first batch of two, despite the backlog''s priority');
select is((select count(*) from pgflight.claim_batch(:w1, 10, 30)), 10::bigint, 'the backlog then fills whole batches');
select is((select count(*) from pgflight.run_events where reason = 'claimed'), 12::bigint, 'every claim is logged');

select * from finish();
rollback;
