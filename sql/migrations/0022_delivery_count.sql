-- How many times a row was delivered (handed to a worker or an endpoint), whatever the cause:
-- a retry, a re-arm after a node or worker was lost, a timeout. A claim counts one, a claim
-- let go before it reached anyone takes it back. Tasks carry it one-based as `delivery`, so
-- that a consumer can tell a redelivery from the first try (`attempt` counts failed tries
-- only, and a redelivery after a node died repeats it).
ALTER TABLE outbox ADD COLUMN deliveries integer NOT NULL DEFAULT 0;
