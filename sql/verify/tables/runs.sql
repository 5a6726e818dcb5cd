select * from pgflight.runs where false;
