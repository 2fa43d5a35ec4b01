#include "load_generator.hpp"

#include <charconv>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>

#include <pqxx/pqxx>

namespace outboxd::chaos {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kRetryDelay{100};
// After stop(), a batch that cannot be acknowledged for this long is abandoned (PostgreSQL
// is gone for good; the checker then reports the run as broken, not this batch as lost).
constexpr std::chrono::seconds kGiveUpAfterStop{60};

// Keys are the default, workflow_id || ':' || ordinal, for workflow 'chaos-<sequence>'.
constexpr std::string_view kKeyPrefix = "chaos-";
constexpr std::string_view kKeySuffix = ":0";

// Rows sequence $1 … $2, one workflow each so that they spread over every shard.
constexpr const char* kStageBatch = R"SQL(
    INSERT INTO outbox (workflow_id, ordinal, activity_type, input)
    SELECT $4::text || s, 0, 'sleep', jsonb_build_object('ms', floor(random() * ($3 + 1))::int)
    FROM generate_series($1::bigint, $2::bigint) AS s
    ON CONFLICT (dispatch_key) DO NOTHING)SQL";

}  // namespace

LoadGenerator::LoadGenerator(LoadSettings settings) : settings_(std::move(settings)) {}

LoadGenerator::~LoadGenerator() { stop(); }

void LoadGenerator::start() {
    thread_ = std::thread([this] { run(); });
}

void LoadGenerator::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
}

std::string LoadGenerator::key_of(std::int64_t sequence) {
    return std::string{kKeyPrefix} + std::to_string(sequence) + std::string{kKeySuffix};
}

std::int64_t LoadGenerator::sequence_of(const std::string& key) {
    const std::string_view text{key};
    if (!text.starts_with(kKeyPrefix) || !text.ends_with(kKeySuffix)) return -1;
    const auto digits =
        text.substr(kKeyPrefix.size(), text.size() - kKeyPrefix.size() - kKeySuffix.size());
    std::int64_t sequence = -1;
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), sequence);
    return error == std::errc{} && end == digits.data() + digits.size() ? sequence : -1;
}

void LoadGenerator::run() {
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>{settings_.batch_rows / settings_.rows_per_s});
    std::unique_ptr<pqxx::connection> connection;
    auto next_batch = Clock::now();
    std::int64_t failures = 0;
    while (!stopping_) {
        std::this_thread::sleep_until(next_batch);
        const std::int64_t first = acknowledged_.load();
        const std::int64_t last = first + settings_.batch_rows - 1;
        // The batch is retried until acknowledged, even past stop(): keys below
        // acknowledged() must all be staged, and this batch's may already be.
        std::optional<Clock::time_point> give_up;
        bool acknowledged = false;
        while (!acknowledged) {
            try {
                if (!connection)
                    connection = std::make_unique<pqxx::connection>(settings_.database_url);
                pqxx::work tx{*connection};
                tx.exec_params(kStageBatch, first, last, settings_.max_task_ms,
                               std::string{kKeyPrefix});
                tx.commit();
                acknowledged = true;
            } catch (const std::exception& error) {
                connection.reset();
                if (stopping_ && !give_up) give_up = Clock::now() + kGiveUpAfterStop;
                if (give_up && Clock::now() > *give_up) return;
                ++retried_;
                if (failures++ % 20 == 0) {
                    std::cerr << "chaos: load: staging failed, retrying: " << error.what() << "\n";
                }
                std::this_thread::sleep_for(kRetryDelay);
            }
        }
        acknowledged_ = last + 1;
        // A steady offered load: batches missed during an outage are not made up for.
        next_batch = std::max(next_batch + interval, Clock::now());
    }
}

}  // namespace outboxd::chaos
