-- The token of the last batch of events the run's lease holder appended: an append whose
-- answer was lost (the connection broke after the commit) is sent again with the same
-- token, and finds it here instead of appending the batch a second time. Postgres only:
-- SQLite has no connection to lose between a commit and its answer.
ALTER TABLE outlast_runs ADD COLUMN append_token uuid;
