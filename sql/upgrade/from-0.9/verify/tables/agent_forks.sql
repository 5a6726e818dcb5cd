-- Verify pgflight:tables/agent_forks
select forked_from, forked_at from pgflight.agent_runs where false;
select reused from pgflight.costs where false;
