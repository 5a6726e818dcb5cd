-- Verify pgflight:functions/_now
select 'pgflight._fake_now(text)'::regprocedure;
select 'pgflight._now()'::regprocedure;
