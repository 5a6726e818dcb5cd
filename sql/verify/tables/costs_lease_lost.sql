-- Verify pgflight:tables/costs_lease_lost
select lease_lost from pgflight.costs where false;
select 'pgflight.one_call_per_iteration'::regclass, 'pgflight.one_orphan_per_attempt'::regclass;
