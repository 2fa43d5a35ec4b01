#include "raw_socket.hpp"

#include <cerrno>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace outboxd::chaos {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

bool wait_for(int fd, short events, Clock::time_point deadline) {
    pollfd entry{fd, events, 0};
    for (;;) {
        const int ready = ::poll(&entry, 1, remaining_ms(deadline));
        if (ready > 0) return true;
        if (ready == 0 || errno != EINTR) return false;
    }
}

}  // namespace

RawSocket::RawSocket(std::uint16_t port, std::chrono::milliseconds timeout) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    if (rc != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return;
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (rc != 0 && (!wait_for(fd, POLLOUT, Clock::now() + timeout) ||
                    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0)) {
        ::close(fd);
        return;
    }
    fd_ = fd;
}

RawSocket::~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::send(const std::string& bytes, std::chrono::milliseconds timeout) {
    if (fd_ < 0) return false;
    const auto deadline = Clock::now() + timeout;
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(fd_, POLLOUT, deadline)) return false;
        } else {
            return false;
        }
    }
    return true;
}

bool RawSocket::receive(std::string& out, std::chrono::milliseconds timeout) {
    if (fd_ < 0) return false;
    const auto deadline = Clock::now() + timeout;
    char chunk[16384];
    while (wait_for(fd_, POLLIN, deadline)) {
        const auto n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n > 0) {
            out.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) return false;
    }
    return true;
}

bool RawSocket::receive_until(std::string& out, const std::string& marker,
                              std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (out.find(marker) == std::string::npos) {
        if (Clock::now() >= deadline) return false;
        if (!receive(out, std::chrono::milliseconds{remaining_ms(deadline)})) return false;
    }
    return true;
}

bool answers_health(std::uint16_t port, std::chrono::milliseconds timeout) {
    RawSocket socket{port, timeout};
    std::string response;
    return socket.connected() &&
           socket.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                       timeout) &&
           socket.receive_until(response, "\r\n\r\n", timeout) &&
           response.rfind("HTTP/1.1 200", 0) == 0;
}

}  // namespace outboxd::chaos
