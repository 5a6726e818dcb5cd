select * from pgflight.events where false;
