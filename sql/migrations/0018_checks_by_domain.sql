-- The priority range (0012) and the traceparent format (0013) checked by the columns' types
-- (domains over smallint and text), not by CHECK constraints of the table.
--
-- PostgreSQL prepares every CHECK constraint of a table anew for each INSERT or UPDATE
-- statement (it parses the stored expression and runs the planner on it), whichever columns
-- the statement writes: every claim, outcome write and application insert paid for the
-- traceparent check's regular expression and string functions, rows with a traceparent or
-- not. A domain's check runs only where a value is written into the column (an INSERT, or
-- an UPDATE whose SET list names it; outboxd's claims and outcome writes never do), and its
-- prepared expression is kept by the server between statements.
--
-- Measured in a PL/pgSQL loop of 20,000 one-row statements of each kind (3 to 7 takes, the
-- means): an insert took 62.5 µs on the schema before the delivery controls, 83.4 µs with
-- both checks (before 0017) and 67.1 µs with 0017 and the domains; an update setting a row
-- claimed or done 43.6, 63.9 and 47.8 µs.
--
-- Clients see the base types (the server describes a domain column by its base type), and
-- a value out of bounds is refused as before: SQLSTATE 23514 (check_violation), naming the
-- same constraint. The existing values already passed both checks when they were written.

CREATE DOMAIN outbox_priority AS smallint
    CONSTRAINT outbox_priority_range CHECK (VALUE BETWEEN 0 AND 100);

CREATE DOMAIN outbox_traceparent AS text
    CONSTRAINT outbox_traceparent_format CHECK (
        VALUE ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
        AND left(VALUE, 2) <> 'ff'
        AND substr(VALUE, 4, 32) <> repeat('0', 32)
        AND substr(VALUE, 37, 16) <> repeat('0', 16));

ALTER TABLE outbox
    DROP CONSTRAINT outbox_priority_range,
    DROP CONSTRAINT outbox_traceparent_format;

-- No rewrite (each domain is binary-compatible with its column's type): the rows are read
-- once to check them, and the index that reads `priority` is built again.
ALTER TABLE outbox
    ALTER COLUMN priority TYPE outbox_priority,
    ALTER COLUMN traceparent TYPE outbox_traceparent;
