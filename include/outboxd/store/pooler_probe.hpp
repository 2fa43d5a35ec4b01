#pragma once

// Whether a database URL leads through a connection pooler that hands one server connection
// to several clients in turn (PgBouncer in transaction or statement mode). outboxd keeps
// session state on its connections (prepared statements, session settings, LISTEN, a
// session advisory lock while migrating), which such a pooler would lose or mix between
// clients, so a node refuses to serve such a URL.

#include <optional>
#include <string>

namespace outboxd::store {

// Opens two connections and asks each, in turn, for its server process id. With session
// pooling or a direct connection every client connection has its own server process; a
// pooler that gave both one process (PgBouncer's default reuses the server it released last)
// or changed one connection's process between statements shares them. Returns that process
// id, or nullopt. Throws UnavailableError when the database is down.
[[nodiscard]] std::optional<int> shared_server_process(const std::string& database_url);

// The error a node logs, and refuses the database with, when the probe found sharing.
[[nodiscard]] std::string pooler_refusal(const std::string& database_name, int server_process);

}  // namespace outboxd::store
