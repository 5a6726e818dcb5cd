select 'pgflight.install_schedules(integer)'::regprocedure, 'pgflight.sweep_loop(double precision, double precision)'::regprocedure;
