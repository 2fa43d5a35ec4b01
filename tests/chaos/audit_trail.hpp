#pragma once

// A test-only audit of outcomes (not a migration): a trigger records every end of a claim —
// the row, the claim token it ended, the status it went to and the database clock — so
// that the checker can tell which claim an applied outcome belonged to, and the done rate
// can be measured over time without polling the table during the run.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outboxd::chaos {

struct ClaimEnd {
    std::int64_t row_id = 0;
    std::int64_t claim_token = 0;
};

class AuditTrail {
public:
    explicit AuditTrail(std::string database_url) : url_(std::move(database_url)) {}

    // Creates the audit table and trigger; the outbox table must exist (migrated).
    void install() const;

    // Claims that ended in done.
    [[nodiscard]] std::vector<ClaimEnd> done_claims() const;
    // Rows whose claim was replaced by another claim without ending first (must be 0).
    [[nodiscard]] std::int64_t overlapping_claims() const;
    // Rows that went to done more than once (must be 0).
    [[nodiscard]] std::int64_t rows_done_twice() const;
    // Writes every recorded claim end to `path`, tab-separated with a header, for a person
    // reading a kept run.
    void export_to(const std::string& path) const;
    // Rows gone to done per `bucket_ms` bucket, keyed by bucket start (unix ms).
    [[nodiscard]] std::map<std::int64_t, std::int64_t> done_per_bucket(
        std::int64_t bucket_ms) const;
    // Rows staged (committed) per `bucket_ms` bucket, keyed by bucket start (unix ms).
    [[nodiscard]] std::map<std::int64_t, std::int64_t> staged_per_bucket(
        std::int64_t bucket_ms) const;

private:
    std::string url_;
};

}  // namespace outboxd::chaos
