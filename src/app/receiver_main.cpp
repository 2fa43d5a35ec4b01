// outboxd-receiver: an HTTP endpoint for HTTP push targets (README, "HTTP push"), for trying
// HTTP push out and for the tests and the benchmark, which need a real receiver process. It
// answers every POST 200 by default and can be told to be slow, to fail, to verify
// signatures and headers and to log each request; GET /stats reports what it saw, as JSON.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

#include "outboxd/sinks/http_push/delivery.hpp"
#include "outboxd/util/secret_file.hpp"

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

struct Options {
    std::string listen = "127.0.0.1:8091";
    std::optional<std::string> secret;
    std::optional<std::string> secret_file;
    std::vector<std::string> required_headers;  // "Name: value"
    int signature_tolerance_s = 300;
    int delay_ms = 0;
    int delay_jitter_ms = 0;
    int delay_attempts = 0;  // delay only attempts 1..N (0: all)
    int fail_first = 0;
    int fail_status = 500;
    double fail_rate = 0;
    std::optional<std::string> retry_after;
    std::optional<int> always_status;
    std::size_t body_bytes = 0;  // pad every answer's body to this many bytes
    std::optional<std::string> log_file;
    std::optional<std::string> tls_cert;
    std::optional<std::string> tls_key;
};

// What the receiver saw, for GET /stats.
struct Stats {
    std::int64_t requests = 0;
    std::int64_t ok = 0;
    std::int64_t failed = 0;
    std::int64_t bad_signatures = 0;
    std::int64_t bad_headers = 0;
    std::int64_t concurrent = 0;
    std::int64_t max_concurrent = 0;
    std::set<std::string> keys;
    std::map<int, std::int64_t> by_status;
};

class Receiver {
public:
    explicit Receiver(Options options)
        : options_(std::move(options)), random_(std::random_device{}()) {
        if (options_.log_file) {
            log_.open(*options_.log_file, std::ios::app);
            if (!log_) throw std::runtime_error("cannot open --log " + *options_.log_file);
        }
    }

    // The status to answer a POST with, and its body.
    std::pair<int, std::string> decide(const http::request<http::string_body>& request) {
        const auto key = std::string{request["Outboxd-Dispatch-Key"]};
        const int attempt = std::atoi(std::string{request["Outboxd-Attempt"]}.c_str());
        const int delivery = std::atoi(std::string{request["Outboxd-Delivery"]}.c_str());
        ++stats_.requests;
        stats_.keys.insert(key);
        int status = 200;
        std::string body = R"({"ok":true})";
        if (options_.secret && !signature_ok(request)) {
            ++stats_.bad_signatures;
            status = 401;
            body = "bad signature";
        } else if (const auto missing = missing_header(request)) {
            ++stats_.bad_headers;
            status = 401;
            body = "missing header " + *missing;
        } else if (options_.always_status) {
            status = *options_.always_status;
            body = "receiver: always " + std::to_string(status);
        } else if (attempt <= options_.fail_first ||
                   (options_.fail_rate > 0 &&
                    std::uniform_real_distribution<double>{0, 1}(random_) < options_.fail_rate)) {
            status = options_.fail_status;
            body = "receiver: failing attempt " + std::to_string(attempt);
        }
        if (body.size() < options_.body_bytes) body.append(options_.body_bytes - body.size(), ' ');
        ++stats_.by_status[status];
        if (status >= 200 && status < 300) {
            ++stats_.ok;
        } else {
            ++stats_.failed;
        }
        if (log_) {
            const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
            log_ << now << ' ' << key << ' ' << attempt << ' ' << status << ' ' << stats_.concurrent
                 << ' ' << delivery << '\n';
            log_.flush();
        }
        return {status, body};
    }

    std::chrono::milliseconds delay(const http::request<http::string_body>& request) {
        const int attempt = std::atoi(std::string{request["Outboxd-Attempt"]}.c_str());
        if (options_.delay_attempts > 0 && attempt > options_.delay_attempts) {
            return std::chrono::milliseconds{0};
        }
        int jitter = 0;
        if (options_.delay_jitter_ms > 0) {
            jitter = std::uniform_int_distribution<int>{0, options_.delay_jitter_ms}(random_);
        }
        return std::chrono::milliseconds{options_.delay_ms + jitter};
    }

    std::string stats_json() const {
        nlohmann::json by_status = nlohmann::json::object();
        for (const auto& [status, count] : stats_.by_status)
            by_status[std::to_string(status)] = count;
        return nlohmann::json{{"requests", stats_.requests},
                              {"ok", stats_.ok},
                              {"failed", stats_.failed},
                              {"bad_signatures", stats_.bad_signatures},
                              {"bad_headers", stats_.bad_headers},
                              {"concurrent", stats_.concurrent},
                              {"max_concurrent", stats_.max_concurrent},
                              {"distinct_keys", stats_.keys.size()},
                              {"by_status", by_status}}
            .dump();
    }

    void begin() { stats_.max_concurrent = std::max(stats_.max_concurrent, ++stats_.concurrent); }
    void end() { --stats_.concurrent; }
    [[nodiscard]] const Options& options() const { return options_; }

private:
    // Outboxd-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t "." body)>, fresh
    // within the tolerance.
    bool signature_ok(const http::request<http::string_body>& request) const {
        const std::string header{request["Outboxd-Signature"]};
        const auto t_at = header.find("t=");
        const auto v_at = header.find(",v1=");
        if (t_at != 0 || v_at == std::string::npos) return false;
        const auto stamp = header.substr(2, v_at - 2);
        std::int64_t t = 0;
        try {
            t = std::stoll(stamp);
        } catch (const std::exception&) {
            return false;
        }
        if (std::llabs(std::time(nullptr) - t) > options_.signature_tolerance_s) return false;
        const auto expected =
            outboxd::sinks::http_push::signature(*options_.secret, t, request.body());
        return expected.size() == header.size() &&
               CRYPTO_memcmp(expected.data(), header.data(), header.size()) == 0;
    }

    // The name of the first --require-header the request lacks (or carries another value of).
    std::optional<std::string> missing_header(
        const http::request<http::string_body>& request) const {
        for (const auto& required : options_.required_headers) {
            const auto colon = required.find(':');
            const auto name = required.substr(0, colon);
            const auto value_at = required.find_first_not_of(' ', colon + 1);
            const auto value = value_at == std::string::npos ? "" : required.substr(value_at);
            const auto given = request.find(name);
            if (given == request.end() || given->value() != value) return name;
        }
        return std::nullopt;
    }

    Options options_;
    Stats stats_;
    std::mt19937_64 random_;
    std::ofstream log_;
};

template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
public:
    Session(Stream stream, Receiver& receiver)
        : stream_(std::move(stream)), receiver_(receiver), timer_(stream_.get_executor()) {}

    void start() {
        if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
            read();
        } else {
            stream_.async_handshake(net::ssl::stream_base::server,
                                    [self = this->shared_from_this()](beast::error_code ec) {
                                        if (!ec) self->read();
                                    });
        }
    }

private:
    void read() {
        request_ = {};
        beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds{60});
        http::async_read(stream_, buffer_, request_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                             self->on_read(ec);
                         });
    }

    void on_read(beast::error_code ec) {
        if (ec) return close();
        response_ = {};
        response_.version(11);
        response_.keep_alive(request_.keep_alive());
        response_.set(http::field::server, "outboxd-receiver");
        if (request_.method() == http::verb::get && request_.target() == "/stats") {
            response_.result(http::status::ok);
            response_.set(http::field::content_type, "application/json");
            response_.body() = receiver_.stats_json();
            return write(false);
        }
        if (request_.method() != http::verb::post) {
            response_.result(http::status::method_not_allowed);
            response_.body() = "POST a task, or GET /stats";
            return write(false);
        }
        receiver_.begin();
        const auto [status, body] = receiver_.decide(request_);
        response_.result(static_cast<unsigned>(status));
        response_.set(http::field::content_type, status == 200 ? "application/json" : "text/plain");
        if (status != 200 && receiver_.options().retry_after) {
            response_.set(http::field::retry_after, *receiver_.options().retry_after);
        }
        response_.body() = body;
        const auto wait = receiver_.delay(request_);
        if (wait.count() == 0) return write(true);
        timer_.expires_after(wait);
        timer_.async_wait(
            [self = this->shared_from_this()](beast::error_code) { self->write(true); });
    }

    void write(bool counted) {
        response_.prepare_payload();
        http::async_write(
            stream_, response_,
            [self = this->shared_from_this(), counted](beast::error_code ec, std::size_t) {
                if (counted) self->receiver_.end();
                if (ec || !self->response_.keep_alive()) return self->close();
                self->read();
            });
    }

    void close() {
        beast::error_code ignored;
        beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    }

    Stream stream_;
    Receiver& receiver_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response<http::string_body> response_;
};

void accept(tcp::acceptor& acceptor, Receiver& receiver, net::ssl::context* tls) {
    acceptor.async_accept([&acceptor, &receiver, tls](beast::error_code ec, tcp::socket socket) {
        if (!ec) {
            socket.set_option(tcp::no_delay(true), ec);
            if (tls) {
                std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
                    beast::ssl_stream<beast::tcp_stream>{beast::tcp_stream{std::move(socket)},
                                                         *tls},
                    receiver)
                    ->start();
            } else {
                std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream{std::move(socket)},
                                                             receiver)
                    ->start();
            }
        }
        accept(acceptor, receiver, tls);
    });
}

int run(int argc, char** argv) {
    Options options;
    CLI::App app{"outboxd-receiver: an HTTP endpoint for outboxd's HTTP push"};
    app.add_option("--listen", options.listen, "HOST:PORT to listen on (port 0: any free port)")
        ->capture_default_str();
    auto* secret =
        app.add_option("--secret", options.secret,
                       "verify Outboxd-Signature with this secret; a bad one is answered 401");
    app.add_option("--secret-file", options.secret_file,
                   "read --secret from this file (trailing line breaks trimmed)")
        ->excludes(secret);
    app.add_option("--require-header", options.required_headers,
                   "'Name: value' a POST must carry, else it is answered 401 (repeatable)")
        ->check([](const std::string& header) {
            return header.find(':') == std::string::npos ? std::string{"must be 'Name: value'"}
                                                         : std::string{};
        });
    app.add_option("--signature-tolerance-s", options.signature_tolerance_s,
                   "how old a signature's timestamp may be")
        ->capture_default_str();
    app.add_option("--delay-ms", options.delay_ms, "answer every POST after this long");
    app.add_option("--delay-jitter-ms", options.delay_jitter_ms, "and up to this much more");
    app.add_option("--delay-attempts", options.delay_attempts,
                   "delay only attempts 1..N of every task (0: all)");
    app.add_option("--fail-first", options.fail_first,
                   "answer --fail-status to attempts 1..N of every task");
    app.add_option("--fail-status", options.fail_status, "status of a failure")
        ->capture_default_str();
    app.add_option("--fail-rate", options.fail_rate, "fail this fraction of requests at random");
    app.add_option("--retry-after", options.retry_after, "Retry-After header of failures");
    app.add_option("--always-status", options.always_status, "answer every POST this status");
    app.add_option("--body-bytes", options.body_bytes,
                   "pad every answer's body to this many bytes (oversized answers)");
    app.add_option(
        "--log", options.log_file,
        "append a line per request: epoch_ms dispatch_key attempt status concurrent delivery");
    app.add_option("--tls-cert", options.tls_cert, "serve HTTPS with this PEM certificate chain");
    app.add_option("--tls-key", options.tls_key, "and this PEM private key");
    CLI11_PARSE(app, argc, argv);
    try {
        if (options.secret_file) {
            try {
                options.secret = outboxd::util::read_secret_file(*options.secret_file);
            } catch (const std::runtime_error& error) {
                throw std::runtime_error(std::string{"--secret-file: "} + error.what());
            }
        }
        const auto colon = options.listen.rfind(':');
        if (colon == std::string::npos) throw std::runtime_error("--listen must be HOST:PORT");
        net::io_context ioc{1};
        std::unique_ptr<net::ssl::context> tls;
        if (options.tls_cert || options.tls_key) {
            if (!options.tls_cert || !options.tls_key) {
                throw std::runtime_error("--tls-cert and --tls-key go together");
            }
            tls = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
            tls->use_certificate_chain_file(*options.tls_cert);
            tls->use_private_key_file(*options.tls_key, net::ssl::context::pem);
        }
        Receiver receiver{options};
        const tcp::endpoint endpoint{
            net::ip::make_address(options.listen.substr(0, colon)),
            static_cast<unsigned short>(std::stoi(options.listen.substr(colon + 1)))};
        tcp::acceptor acceptor{ioc, endpoint};
        std::cout << "listening " << endpoint.address().to_string() << ':'
                  << acceptor.local_endpoint().port() << std::endl;
        net::signal_set signals{ioc, SIGINT, SIGTERM};
        signals.async_wait([&ioc](beast::error_code, int) { ioc.stop(); });
        accept(acceptor, receiver, tls.get());
        ioc.run();
        return 0;
    } catch (const std::exception& error) {
        std::cerr << "outboxd-receiver: " << error.what() << std::endl;
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        std::cerr << "outboxd-receiver: " << error.what() << std::endl;
        return 1;
    }
}
