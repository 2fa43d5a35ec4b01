#pragma once

// Steady load: a thread staging rows into `outbox` at a fixed rate with plain SQL, as an
// application would, on PostgreSQL's own port (never a node's proxy). A batch whose commit
// fails or is in doubt is re-sent until one commit is acknowledged: the same dispatch keys
// with ON CONFLICT DO NOTHING, the outbox's idempotent staging. So once stop() returns,
// every key up to acknowledged() is durably staged, through restarts included.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace outboxd::chaos {

struct LoadSettings {
    std::string database_url;
    double rows_per_s = 200;
    int batch_rows = 10;    // rows per transaction
    int max_task_ms = 100;  // each row's task sleeps a random 0..this
};

class LoadGenerator {
public:
    explicit LoadGenerator(LoadSettings settings);
    ~LoadGenerator();  // stop()
    LoadGenerator(const LoadGenerator&) = delete;
    LoadGenerator& operator=(const LoadGenerator&) = delete;

    void start();
    // Stops after the batch in progress has been acknowledged.
    void stop();

    // Rows of acknowledged batches: the keys key_of(0) … key_of(acknowledged() - 1).
    [[nodiscard]] std::int64_t acknowledged() const { return acknowledged_.load(); }
    // Attempts that failed or whose commit was in doubt, each followed by another.
    [[nodiscard]] std::int64_t retries() const { return retried_.load(); }
    [[nodiscard]] static std::string key_of(std::int64_t sequence);
    // The sequence of a key key_of() made; -1 for any other key.
    [[nodiscard]] static std::int64_t sequence_of(const std::string& key);

private:
    void run();

    LoadSettings settings_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::int64_t> acknowledged_{0};
    std::atomic<std::int64_t> retried_{0};
    std::thread thread_;
};

}  // namespace outboxd::chaos
