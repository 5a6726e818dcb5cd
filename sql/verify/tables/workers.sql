select * from pgflight.workers where false;
