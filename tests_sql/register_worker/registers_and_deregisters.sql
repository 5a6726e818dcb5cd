-- register_worker returns an id that claims carry; a blank name is 22023; a deregistered or
-- unknown worker is refused by claim_batch and heartbeat with ZF010.
begin;
\ir ../_helpers.psql
select plan(7);

select pgflight.register_worker('host:1', '{"hostname": "h", "pid": 42, "recipes": ["a", "b"]}') as w \gset
select results_eq(format('select name, hostname, pid, recipes from pgflight.workers where id = %s', :w),
                  $$values ('host:1', 'h', 42, array['a', 'b'])$$, 'name, hostname, pid and recipes are stored');
select throws_ok($$select pgflight.register_worker('')$$, '22023', null, 'a blank name is refused');
select throws_ok($$select pgflight.register_worker(null)$$, '22023', null, 'a NULL name is refused');
select lives_ok(format('select pgflight.claim_batch(%s, 1, 30)', :w), 'a registered worker can claim');
select pgflight.deregister_worker(:w) \gset
select isnt((select stopped_at from pgflight.workers where id = :w), null, 'deregister marks the worker stopped');
select throws_ok(format('select pgflight.claim_batch(%s, 1, 30)', :w), 'ZF010', null, 'a stopped worker cannot claim');
select throws_ok($$select pgflight.heartbeat(-1, '{}', '{}')$$, 'ZF010', null, 'an unknown worker cannot heartbeat');

select * from finish();
rollback;
