#include "outboxd/auth/credential_book.hpp"

#include <spdlog/spdlog.h>

#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::auth {

CredentialBook::CredentialBook(const boost::asio::any_io_executor& loop, store::AdminLane& lane,
                               Authenticator& authenticator, std::chrono::milliseconds ttl,
                               prometheus::Counter& faults)
    : loop_(loop),
      lane_(lane),
      authenticator_(authenticator),
      periodic_(
          loop, std::max(ttl, std::chrono::milliseconds{50}), [this] { read_now(); }, faults) {}

void CredentialBook::start() {
    read_now();
    periodic_.start();
}

void CredentialBook::stop() { periodic_.stop(); }

void CredentialBook::read_now() {
    // Periodic: when the lane is full, the next read tries again.
    (void)lane_.call(
        loop_, lifetime_.watch(),
        [known = version_](store::AdminStores& db) { return db.access.list_credentials(known); },
        [this](const store::LaneResult<store::AccessStore::Credentials>& listed) {
            apply(listed);
        });
}

void CredentialBook::apply(const store::LaneResult<store::AccessStore::Credentials>& listed) {
    if (!listed.ok()) {
        const auto now = std::chrono::steady_clock::now();
        if (failures_.failed(now)) {
            spdlog::warn("event=credentials_read_failed failures={} for_ms={} error=\"{}\"",
                         failures_.failures(), failures_.lasted(now).count(),
                         util::log_safe(listed.error));
        }
        return;  // keep the last copy
    }
    if (const auto failed = failures_.succeeded(); failed > 0) {
        spdlog::info("event=credentials_read_recovered failures={}", failed);
    }
    const bool first = !authenticator_.managed_loaded();
    const auto& read = listed.value;
    const auto database_now =
        std::chrono::time_point_cast<std::chrono::system_clock::duration>(read.now);
    if (read.changed) {
        authenticator_.replace_managed(read.credentials, database_now);
        version_ = read.version;
    } else {
        authenticator_.set_database_now(database_now);
    }
    if (first) spdlog::info("event=credentials_read managed={}", read.credentials.size());
    if (on_read_) on_read_();
}

}  // namespace outboxd::auth
