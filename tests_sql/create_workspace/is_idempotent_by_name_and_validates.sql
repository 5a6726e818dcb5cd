-- create_workspace: creates a tenant, returns the same id for the same name (updating caps), and
-- refuses a blank name or a non-numeric cap with 22023.
begin;
\ir ../_helpers.psql
select plan(7);

select pgflight.create_workspace('acme', '{"daily_usd_cap": 10}') as acme \gset
select cmp_ok(:acme::bigint, '>', 0::bigint, 'returns the new workspace id');
select is(pgflight.create_workspace('acme', '{"max_run_usd": 2.5}'), :acme::bigint, 'the same name returns the same id');
select results_eq(
  $$select daily_usd_cap, max_run_usd from pgflight.workspaces where name = 'acme'$$,
  $$values (10::numeric(14,6), 2.5::numeric(14,6))$$,
  'a second call adds caps and keeps the ones it does not mention');
select throws_ok($$select pgflight.create_workspace('  ')$$, '22023', null, 'a blank name is refused');
select throws_ok($$select pgflight.create_workspace(null)$$, '22023', null, 'a NULL name is refused');
select throws_ok($$select pgflight.create_workspace('x', '{"daily_usd_cap": "ten"}')$$, '22023', null,
                 'a non-numeric cap is refused');
select is((select count(*) from pgflight.workspaces where name in ('  ', 'x')), 0::bigint, 'refused calls create nothing');

select * from finish();
rollback;
