select 'pgflight.submit_run(text, text, jsonb, jsonb)'::regprocedure;
