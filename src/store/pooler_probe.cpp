#include "outboxd/store/pooler_probe.hpp"

#include "pg_session.hpp"

namespace outboxd::store {

std::optional<int> shared_server_process(const std::string& database_url) {
    PgSession first{database_url, std::vector<Statement>{}};
    PgSession second{database_url, std::vector<Statement>{}};
    const auto pid = [](PgSession& session) {
        try {
            return pqxx::nontransaction{session.connection()}
                .exec("SELECT pg_backend_pid()")[0][0]
                .as<int>();
        } catch (...) {
            session.rethrow_as_store_error("pooler_probe");
        }
    };
    const int a = pid(first);
    const int b = pid(second);
    const int again = pid(first);
    if (a == b) return a;
    if (again != a) return again;
    return std::nullopt;
}

std::string pooler_refusal(const std::string& database_name, int server_process) {
    return "database " + database_name +
           ": two of this node's connections were served by one PostgreSQL server process (" +
           std::to_string(server_process) +
           "): the URL leads through a pooler in transaction or statement mode (PgBouncer "
           "pool_mode=transaction). outboxd keeps session state on its connections (prepared "
           "statements, settings, LISTEN): use pool_mode=session or connect directly";
}

}  // namespace outboxd::store
