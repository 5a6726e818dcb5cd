-- pause_workspace stops claims of the workspace (other workspaces go on) and logs the login and
-- the note; resume_workspace makes the work claimable again.
begin;
\ir ../_helpers.psql
select plan(6);

select pgflight.create_workspace('other');
select attempt_id as mine from pgflight.submit_run('test', 'r', '{}') \gset
select attempt_id as theirs from pgflight.submit_run('other', 'r', '{}') \gset

select ok(pgflight.pause_workspace('test', 'maintenance'), 'paused');
select results_eq(format('select attempt_id from pgflight.claim_batch(%s, 10, 30)', :w1),
                  format('values (%s::bigint)', :theirs), 'only the other workspace is claimed');
select is((select actor from pgflight.run_events where reason = 'workspace_paused'), current_user::text,
          'the events log names the login');
select is((select detail ->> 'note' from pgflight.run_events where reason = 'workspace_paused'), 'maintenance',
          'and the note');
select ok(pgflight.resume_workspace('test'), 'resumed');
select results_eq(format('select attempt_id from pgflight.claim_batch(%s, 10, 30)', :w1),
                  format('values (%s::bigint)', :mine), 'its work is claimable again');

select * from finish();
rollback;
