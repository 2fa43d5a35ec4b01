#include "outboxd/store/outbox_session.hpp"

#include <span>

#include "access_sql.hpp"
#include "admin_sql.hpp"
#include "claim_sql.hpp"
#include "maintenance_sql.hpp"
#include "outcome_sql.hpp"
#include "pg_session.hpp"
#include "schedule_sql.hpp"
#include "session_sql.hpp"
#include "target_sql.hpp"

namespace outboxd::store {
namespace {

std::vector<std::string> session_setup(OutboxSession::Commits commits,
                                       std::chrono::milliseconds statement_timeout) {
    const auto& base = commits == OutboxSession::Commits::relaxed
                           ? std::span<const std::string_view>{sql::kRelaxedSessionSetup}
                           : std::span<const std::string_view>{sql::kSessionSetup};
    std::vector<std::string> setup(base.begin(), base.end());
    if (statement_timeout.count() > 0) {
        setup.push_back("SET statement_timeout = " + std::to_string(statement_timeout.count()));
    }
    return setup;
}

std::vector<Statement> statements_of(OutboxSession::Uses set) {
    using Uses = OutboxSession::Uses;
    std::vector<Statement> out;
    const auto add = [&](Uses one, std::span<const Statement> statements) {
        if (uses(set, one)) out.insert(out.end(), statements.begin(), statements.end());
    };
    add(Uses::claims, sql::kClaimStatements);
    add(Uses::outcomes, sql::kOutcomeStatements);
    add(Uses::maintenance, sql::kMaintenanceStatements);
    add(Uses::admin, sql::kAdminStatements);
    add(Uses::targets, sql::kTargetStatements);
    add(Uses::schedules, sql::kScheduleStatements);
    add(Uses::access, sql::kAccessStatements);
    return out;
}

}  // namespace

OutboxSession::OutboxSession(const std::string& database_url, Uses uses, Commits commits,
                             std::chrono::milliseconds statement_timeout)
    : pg_(std::make_unique<PgSession>(database_url, statements_of(uses),
                                      session_setup(commits, statement_timeout))) {}

OutboxSession::~OutboxSession() = default;

void OutboxSession::disconnect() { pg_->disconnect(); }

void OutboxSession::connect() {
    try {
        (void)pg_->connection();
    } catch (...) {
        pg_->rethrow_as_store_error("connect");
    }
}

}  // namespace outboxd::store
