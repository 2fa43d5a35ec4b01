#pragma once

// Demo mode: with no database URL, outboxd runs against a private PostgreSQL cluster of its
// own (initdb + pg_ctl from the Debian postgresql package), kept under a data directory so
// that several demo nodes on one machine share it and it survives restarts.

#include <string>

namespace outboxd::app {

// Initialises (first time) and starts (when not running) the embedded cluster under `dir`,
// listening on 127.0.0.1 only; returns its URL. Throws std::runtime_error saying what to
// install or which log to read when it cannot.
[[nodiscard]] std::string ensure_embedded_postgres(const std::string& dir);

// Where the embedded cluster lives unless OUTBOXD_EMBEDDED_PG_DIR says otherwise.
[[nodiscard]] std::string default_embedded_dir();

}  // namespace outboxd::app
