-- revoke_workspace removes one lane of one login on one workspace: after it, the reader of A sees
-- none of A's runs, a second revoke removes nothing, an unknown workspace is ZF003.
begin;
\ir ../_helpers.psql
select plan(5);

create role pgtap_revoked_reader login in role pgflight_reader;
select pgflight.create_workspace('A');
select pgflight.grant_workspace('pgtap_revoked_reader', 'A', 'reader');
select run_id as a_run from pgflight.submit_run('A', 'shared', '{}') \gset

set local session authorization pgtap_revoked_reader;  -- lanes follow session_user
select is((select count(*) from pgflight.run_list where run_id = :a_run), 1::bigint,
          'with the grant, the reader sees the run of A');
reset session authorization;

select is(pgflight.revoke_workspace('pgtap_revoked_reader', 'A', 'reader'), true, 'the grant is removed');
select is(pgflight.revoke_workspace('pgtap_revoked_reader', 'A', 'reader'), false,
          'revoking it again removes nothing');
select throws_ok($$ select pgflight.revoke_workspace('pgtap_revoked_reader', 'nope', 'reader') $$,
                 'ZF003', null, 'an unknown workspace is ZF003');

set local session authorization pgtap_revoked_reader;  -- lanes follow session_user
select is((select count(*) from pgflight.run_list where run_id = :a_run), 0::bigint,
          'after the revoke, the reader sees nothing of A');
reset session authorization;

select * from finish();
rollback;
