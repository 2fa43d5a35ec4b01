#pragma once

// An HTTP endpoint inside the driver for the HTTP push latency run: answers every POST 200
// at once (keep-alive), after telling `arrived` the request's Outboxd-Dispatch-Key. Runs its
// own thread; `arrived` is called there. Listens on 127.0.0.1, a free port.

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace outboxd::bench {

class HttpSink {
public:
    using Arrived = std::function<void(std::string_view dispatch_key)>;

    explicit HttpSink(Arrived arrived);
    ~HttpSink();  // stops the thread and closes every connection
    HttpSink(const HttpSink&) = delete;
    HttpSink& operator=(const HttpSink&) = delete;

    [[nodiscard]] std::uint16_t port() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace outboxd::bench
