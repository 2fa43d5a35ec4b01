#include "hostile_client.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "chaos_clock.hpp"
#include "hostile_payloads.hpp"
#include "raw_socket.hpp"
#include "ws_frame.hpp"

namespace outboxd::chaos {

namespace {

constexpr std::chrono::milliseconds kConnectTimeout{1000};
constexpr std::chrono::milliseconds kSendTimeout{2000};
constexpr std::chrono::milliseconds kAnswerWait{200};
constexpr std::chrono::milliseconds kTaskWait{1500};
constexpr std::chrono::milliseconds kNodeBackTimeout{15000};
constexpr std::chrono::milliseconds kHealthTimeout{2000};
constexpr std::chrono::milliseconds kBeforeHealthCheck{20};
constexpr int kHostileCredit = 8;

bool upgrade(RawSocket& socket) {
    std::string response;
    return socket.send(ws_upgrade_request("/v1/workers"), kSendTimeout) &&
           socket.receive_until(response, "\r\n\r\n", kConnectTimeout) &&
           response.rfind("HTTP/1.1 101", 0) == 0;
}

// Appends one line with a single write(2), as outboxd-worker's delivery log does.
class LogFile {
public:
    explicit LogFile(const std::string& path)
        : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
    ~LogFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    LogFile(const LogFile&) = delete;
    LogFile& operator=(const LogFile&) = delete;
    void append(const std::string& line) const {
        if (fd_ >= 0) (void)!::write(fd_, line.data(), line.size());
    }

private:
    int fd_;
};

}  // namespace

HostileTally HostileClient::attack(std::uint16_t port) const {
    Attack attack;
    attack.port = port;
    for (const auto& payload : hostile_http_payloads()) {
        send(attack, payload.name, [&payload](RawSocket& socket) {
            (void)socket.send(payload.bytes, kSendTimeout);
            std::string ignored;
            (void)socket.receive(ignored, kAnswerWait);
            return true;
        });
    }
    for (const auto& payload : hostile_ws_payloads()) {
        send(attack, payload.name, [&payload](RawSocket& socket) {
            if (!upgrade(socket)) return false;
            for (const auto& frame : payload.frames) {
                if (!socket.send(frame, kSendTimeout)) break;
            }
            std::string ignored;
            (void)socket.receive(ignored, kAnswerWait);
            return true;
        });
    }
    send(attack, "hostile-worker",
         [this, &attack](RawSocket& socket) { return misbehave_as_worker(socket, attack.tally); });
    return attack.tally;
}

void HostileClient::send(Attack& attack, const std::string& name,
                         const std::function<bool(RawSocket&)>& payload) const {
    // A node killed by an earlier payload is restarted by the harness: wait for it, so that
    // every payload meets a live node and each death is pinned on one payload.
    if (!answers_health(attack.port, kHealthTimeout)) {
        (void)await_condition([&] { return answers_health(attack.port, kHealthTimeout); },
                              kNodeBackTimeout);
    }
    {
        RawSocket socket{attack.port, kConnectTimeout};
        if (!socket.connected()) {
            ++attack.tally.not_connected;
            return;
        }
        ++attack.tally.connections;
        if (!payload(socket)) ++attack.tally.upgrades_refused;
    }
    // Closed first: a node may fall over when the connection ends, not only when it reads.
    std::this_thread::sleep_for(kBeforeHealthCheck);
    if (!answers_health(attack.port, kHealthTimeout)) attack.tally.suspects.push_back(name);
}

bool HostileClient::misbehave_as_worker(RawSocket& socket, HostileTally& tally) const {
    if (!upgrade(socket)) return false;
    const nlohmann::json hello{{"type", "hello"},
                               {"worker_id", "hostile-worker"},
                               {"activity_types", {"sleep"}},
                               {"max_in_flight", kHostileCredit}};
    if (!socket.send(ws_frame(hello.dump()), kSendTimeout)) return true;

    const LogFile log{delivery_log_};
    std::string buffer;
    int taken = 0;
    const auto deadline = std::chrono::steady_clock::now() + kTaskWait;
    while (std::chrono::steady_clock::now() < deadline && taken < kHostileCredit) {
        if (!socket.receive(buffer, kAnswerWait)) break;
        for (bool complete = true; complete;) {
            const auto text = take_server_text(buffer, complete);
            if (!text) continue;
            const auto frame = nlohmann::json::parse(*text, nullptr, false);
            if (!frame.is_object() || frame.value("type", "") != "task") continue;
            const auto task_id = frame.value("task_id", "");
            const auto key = frame.value("dispatch_key", "");
            log.append("deliver " + std::to_string(unix_ms()) + " " + task_id + " " + key + " " +
                       std::to_string(frame.value("attempt", 0)) + "\n");
            ++tally.tasks_taken;
            // Each complete is logged before it is sent: the node may apply it.
            const auto complete_line =
                "complete " + std::to_string(unix_ms()) + " " + task_id + " " + key + "\n";
            switch (taken++ % 4) {
                case 0:
                    log.append(complete_line);
                    ++tally.tasks_completed;
                    (void)socket.send(
                        ws_frame(R"({"type":"complete","task_id":")" + task_id + R"(","result":)" +
                                 nested('[', ']', 20000, true) + "}"),
                        kSendTimeout);
                    break;
                case 1:
                    (void)socket.send(
                        ws_frame(R"({"type":"fail","task_id":")" + task_id +
                                 R"(","error":{"deep":)" + nested('[', ']', 1000, true) +
                                 R"(},"retryable":"sometimes"})"),
                        kSendTimeout);
                    break;
                case 2:
                    log.append(complete_line);
                    ++tally.tasks_completed;
                    for (int twice = 0; twice < 2; ++twice) {
                        (void)socket.send(
                            ws_frame(R"({"type":"complete","task_id":")" + task_id + "\"}"),
                            kSendTimeout);
                    }
                    break;
                default:
                    // Another claim of the same row: the fence must refuse it.
                    (void)socket.send(
                        ws_frame(R"({"type":"complete","task_id":")" + task_id + "7\"}"),
                        kSendTimeout);
                    break;
            }
        }
    }
    // Gone without a close frame, with tasks unanswered: the node re-arms them.
    return true;
}

}  // namespace outboxd::chaos
