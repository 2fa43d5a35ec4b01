#pragma once

// SQL fragments that several consumers' statements say alike about the outbox table.
// Internal to src/store.

// clang-format off

// Whether row `o` of an ordered namespace has an earlier row of its workflow pending,
// claimed by an ordered claim or, with `failed_blocks`, dead-lettered: one probe of
// outbox_workflow_order_idx, whose predicate (0014) the second line repeats word for word.
// Used by the ordered claims (claim_sql.hpp) and by the backstop that lets waiting rows go
// (maintenance_sql.hpp).
#define OUTBOXD_HAS_EARLIER(o, failed_blocks)                                          \
    "EXISTS (SELECT 1 FROM outbox p WHERE p.workflow_id = " o ".workflow_id"          \
    "   AND (p.status IN ('pending', 'failed') OR (p.status = 'claimed' AND p.holds_order))" \
    "   AND (p.ordinal, p.id) < (" o ".ordinal, " o ".id)"                             \
    "   AND (p.status <> 'failed' OR " failed_blocks "))"

// A row that leaves `claimed` clears the claim's fields (CHECK outbox_claim_fields_iff_claimed).
#define OUTBOXD_CLEAR_CLAIM "claimed_at = NULL, claimed_by = NULL, claim_token = NULL"

// clang-format on
