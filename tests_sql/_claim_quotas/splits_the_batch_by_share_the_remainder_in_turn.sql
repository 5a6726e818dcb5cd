-- A fair claim's quotas: the batch split by share, rounded down, the remainder one each in turn
-- order from the first workspace of the turn, so every workspace gets one while the batch has room;
-- a workspace's fair share of the global cap caps its quota.
begin;
\ir ../_helpers.psql
select plan(6);

select is(pgflight._claim_quotas(10, array[1, 1, 1], 0, null), array[4, 3, 3],
          'three equal shares of 10: 3 each, the one left to the first in turn');
select is(pgflight._claim_quotas(10, array[1, 1, 1], 2, null), array[3, 3, 4],
          'the turn starting at the third: the one left goes to the third');
select is(pgflight._claim_quotas(2, array[1, 1, 1], 1, null), array[0, 1, 1],
          'a batch smaller than the workspaces: one each from the turn''s first while it lasts');
select is(pgflight._claim_quotas(10, array[3, 1], 0, null), array[8, 2],
          'shares 3 and 1: 7 and 2 rounded down, the one left to the first in turn');
select is(pgflight._claim_quotas(10, array[1, 1], 1, array[2, 8]), array[2, 5],
          'a fair-share cap cuts a quota, and what it cuts is not moved to another');
select is(pgflight._claim_quotas(1, array[5], 0, null), array[1],
          'one workspace takes the whole batch');

select * from finish();
rollback;
