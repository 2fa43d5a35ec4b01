#include "outboxd/store/outbox_session.hpp"

#include <span>

#include "outbox_sql.hpp"
#include "pg_session.hpp"

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

}  // namespace

OutboxSession::OutboxSession(const std::string& database_url, Commits commits,
                             std::chrono::milliseconds statement_timeout)
    : pg_(std::make_unique<PgSession>(database_url, sql::kOutboxStatements,
                                      session_setup(commits, statement_timeout))) {}

OutboxSession::~OutboxSession() = default;

void OutboxSession::connect() {
    try {
        (void)pg_->connection();
    } catch (...) {
        pg_->rethrow_as_store_error("connect");
    }
}

}  // namespace outboxd::store
