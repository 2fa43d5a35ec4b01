#pragma once

#include <cstddef>

#include "outboxd/store/outbox_row.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::store {

using util::kMaxIdentifierBytes;  // upper bound on keys, ids and names, in bytes

// Throws ValidationError naming the field and `index` when `row` could not be staged as is:
// empty or oversized identifiers, a negative ordinal or attempt, input that is not one JSON
// value, text PostgreSQL cannot store (NUL bytes, \u0000 in JSON).
void validate_new_row(const NewRow& row, std::size_t index);

}  // namespace outboxd::store
