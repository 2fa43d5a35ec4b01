#pragma once

// Errors the store reports. Expected outcomes (not found, duplicate, stale claim) are
// values, never exceptions; these are for operations that cannot complete.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace outboxd::store {

// Base of every store failure.
class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The data is at fault: input the store refuses before touching the database, or that the
// database refused as data (SQLSTATE classes 22 data exception, 23 integrity constraint
// violation, 54 program limit exceeded). Retrying the same data fails the same way.
// `row_index` names the offending row of a batch.
class ValidationError : public StoreError {
public:
    ValidationError(const std::string& message, std::optional<std::size_t> row_index = std::nullopt)
        : StoreError(message), row_index_(row_index) {}
    [[nodiscard]] std::optional<std::size_t> row_index() const noexcept { return row_index_; }

private:
    std::optional<std::size_t> row_index_;
};

// Every other StoreError (a lost connection, a conflict, a statement timeout, an operator's
// trigger raising an exception, a schema that does not match) may go away: retry with
// backoff.

// A stored value the store cannot decode (e.g. an unknown status token).
class DecodeError : public StoreError {
public:
    using StoreError::StoreError;
};

// A failure of the database, not of what was asked: the same operation may well succeed
// later, unchanged (back off, then retry). A claim round that meets one fails as a whole;
// a failure of any other kind is the route's own (dispatch/claim_round.hpp).
class TransientError : public StoreError {
public:
    using StoreError::StoreError;
};

// The database cannot be reached or the connection broke; the operation may be retried
// on a fresh connection. Whether it took effect is unknown.
class UnavailableError : public TransientError {
public:
    using TransientError::TransientError;
};

// A transient conflict (serialization failure, deadlock, a statement or lock timeout):
// retry the operation.
class ConflictError : public TransientError {
public:
    using TransientError::TransientError;
};

// A migration failed or does not match what was applied before.
class MigrationError : public StoreError {
public:
    using StoreError::StoreError;
};

}  // namespace outboxd::store
