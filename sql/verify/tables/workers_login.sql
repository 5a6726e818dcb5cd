-- Verify pgflight:tables/workers_login
select login from pgflight.workers where false;
