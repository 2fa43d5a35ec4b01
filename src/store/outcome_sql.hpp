#pragma once

// The outcomes lane's statements (OutcomeStore): outcomes written in batches, fenced by the
// claim token, and the durable deadlines and heartbeats of outstanding tasks. Internal to
// src/store.

#include <array>

#include "pg_codec.hpp"
#include "pg_session.hpp"

namespace outboxd::store::sql {

// clang-format off

// One statement for a batch of outcomes; each applies only while its claim token matches.
// A token is set only while the row is claimed (CHECK outbox_claim_fields_iff_claimed), so
// the statement names no status: with `status = 'claimed'` the planner may drive the join
// from the claimed-rows index, walking every entry of it (all dead rows included, under an
// old snapshot) per batch, instead of probing the primary key once per outcome.
// Planned once per connection (Plan::generic), as a probe of the primary key per outcome
// whatever the batch: planning it cost ~0.3 ms per write, close to the ~0.4 ms of running
// a write of a few outcomes (pg_stat_statements at 1,000 rows/s).
// $6: the results, one JSON array: a done outcome's result is element n of it (parsed once,
// as jsonb, for the whole batch; an element is read by its offset), JSON null or none for no
// result; any other outcome leaves none. An attempt count saturates: a row staged by plain
// SQL may already hold the largest int. An immediate re-arm (failover, release) keeps the
// row's place in line: it was due already, and going to the back of a long backlog would
// delay the failover.
#define OUTBOXD_RECORD_OUTCOMES                                                          \
    " UPDATE outbox o SET"                                                                \
    "   status = CASE t.kind WHEN 'done' THEN 'done' WHEN 'fail' THEN 'failed'"           \
    "                        ELSE 'pending' END,"                                         \
    "   attempt = CASE WHEN t.kind IN ('retry', 'fail') AND o.attempt < 2147483647"       \
    "                  THEN o.attempt + 1 ELSE o.attempt END,"                            \
    "   visible_after = CASE"                                                             \
    "       WHEN t.kind = 'release' OR (t.kind = 'retry' AND t.delay_ms = 0)"             \
    "           THEN least(o.visible_after, now())"                                       \
    "       WHEN t.kind = 'retry' THEN now() + t.delay_ms * interval '1 millisecond'"     \
    "       ELSE o.visible_after END,"                                                    \
    "   last_error = CASE WHEN t.kind IN ('retry', 'fail') THEN t.error ELSE o.last_error END," \
    "   finished_at = CASE WHEN t.kind IN ('done', 'fail') THEN now() END,"               \
    "   result = CASE WHEN t.kind = 'done' THEN nullif($6::jsonb -> (t.n::int - 1), 'null') END," \
    "   deliveries = CASE WHEN t.kind = 'release' THEN greatest(o.deliveries - 1, 0)"    \
    "                     ELSE o.deliveries END,"                                         \
    "   claimed_at = NULL, claimed_by = NULL, claim_token = NULL"                         \
    " FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[])"      \
    "      WITH ORDINALITY AS t(id, token, kind, delay_ms, error, n)"                     \
    " WHERE o.id = t.id AND o.claim_token = t.token"                                      \
    " RETURNING t.id, t.token"

inline constexpr Statement kRecordOutcomes{"outbox_record_outcomes", OUTBOXD_RECORD_OUTCOMES,
    Plan::generic};

// The same write for a batch that ends rows of ordered namespaces. $7: the workflows whose
// row ended with this write: the first waiting row of each is let go, due at once (or at its
// own visible_after, if later). The claim checks again whether it is next: a row let go too
// early waits again. A statement of its own, so that a write of a namespace without
// ordering does not run the let-go CTE with nothing to let go (pg_stat_statements, one-row
// writes at 1,000 rows/s: 171 -> 163 µs a call without it).
inline constexpr Statement kRecordOutcomesLettingGo{"outbox_record_outcomes_letting_go",
    "WITH let_go AS ("
    " UPDATE outbox w SET waiting = false, visible_after = greatest(w.visible_after, now())"
    " WHERE w.id = ANY (ARRAY(SELECT (SELECT x.id FROM outbox x"
    "                                 WHERE x.workflow_id = u.workflow AND x.status = 'pending'"
    "                                   AND x.waiting"
    "                                 ORDER BY x.ordinal, x.id LIMIT 1)"
    "                         FROM unnest($7::text[]) AS u(workflow))))"
    OUTBOXD_RECORD_OUTCOMES, Plan::generic};

// Durable deadlines and heartbeats of claims, one statement for a batch; each applies only
// while its claim token matches. $1 ids, $2 tokens, $3 ms until the deadline, $4 whether a
// heartbeat came, $5 progress (JSON text; NULL: none new). Planned once per connection.
inline constexpr Statement kWriteLeases{"outbox_write_leases", R"SQL(
UPDATE outbox o SET
    lease_token = t.token,
    lease_expires_at = now() + t.expires_ms * interval '1 millisecond',
    heartbeat_at = CASE WHEN t.beat THEN now() ELSE o.heartbeat_at END,
    progress = coalesce(t.progress::jsonb, o.progress)
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bool[], $5::text[])
     AS t(id, token, expires_ms, beat, progress)
WHERE o.id = t.id AND o.claim_token = t.token)SQL", Plan::generic};

// Every statement an outcomes lane prepares.
inline constexpr std::array kOutcomeStatements{kRecordOutcomes, kRecordOutcomesLettingGo,
                                               kWriteLeases};

// clang-format on

}  // namespace outboxd::store::sql
