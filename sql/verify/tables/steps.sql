select * from pgflight.steps where false;
