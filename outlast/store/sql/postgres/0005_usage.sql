-- Budget usage of a run (steps, tool calls, tokens, cost, wall time, parallel branches),
-- and whether a budget closed it with a partial result.
ALTER TABLE outlast_runs ADD COLUMN usage jsonb;
