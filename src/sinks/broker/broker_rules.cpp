#include "outboxd/sinks/broker/broker_rules.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include <netdb.h>

#include "outboxd/util/secret_box.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::broker {
namespace {

constexpr std::size_t kMaxCredentialBytes = 4096;
constexpr std::size_t kMaxUserBytes = 255;

std::optional<FieldProblem> problem(std::string field, std::string message) {
    return FieldProblem{std::move(field), std::move(message)};
}

http_push::TargetUrl as_target_url(const Endpoint& endpoint) {
    http_push::TargetUrl url;
    url.host = endpoint.host;
    url.port = endpoint.port;
    url.tls = endpoint.tls;
    url.host_is_address = http_push::address_bytes(endpoint.host).has_value();
    return url;
}

}  // namespace

std::optional<std::string> host_problem(const Endpoint& endpoint, const HostPolicy& policy) {
    return policy.host_problem(as_target_url(endpoint));
}

CheckedAddresses checked_addresses(const Endpoint& endpoint, const HostPolicy& policy) {
    const auto target = as_target_url(endpoint);
    CheckedAddresses out;
    ::addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = target.host_is_address ? AI_NUMERICHOST : 0;
    ::addrinfo* found = nullptr;
    const auto port = std::to_string(endpoint.port);
    if (const int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
        out.problem = "cannot resolve '" + util::sanitize_text(endpoint.host, 200) +
                      "': " + ::gai_strerror(rc);
        return out;
    }
    for (auto* at = found; at != nullptr && !out.problem; at = at->ai_next) {
        std::array<char, NI_MAXHOST> text{};
        if (::getnameinfo(at->ai_addr, at->ai_addrlen, text.data(), text.size(), nullptr, 0,
                          NI_NUMERICHOST) != 0) {
            continue;
        }
        out.problem = policy.address_problem(target, text.data());
        sockaddr_storage address{};
        std::memcpy(&address, at->ai_addr, std::min<std::size_t>(at->ai_addrlen, sizeof address));
        out.addresses.push_back(address);
    }
    ::freeaddrinfo(found);
    if (!out.problem && out.addresses.empty()) {
        out.problem = "'" + util::sanitize_text(endpoint.host, 200) + "' has no address";
    }
    return out;
}

const std::string* option(const store::TargetSettings& target, std::string_view name) {
    const auto it = target.options.find(std::string{name});
    return it == target.options.end() ? nullptr : &it->second;
}

std::optional<FieldProblem> path_problem(const std::string* path, std::string_view field) {
    if (path == nullptr) return std::nullopt;
    if (path->empty() || path->front() != '/' || path->size() > http_push::kMaxPathBytes ||
        path->find('\0') != std::string::npos) {
        return problem(std::string{field}, std::string{field} + " must be an absolute path");
    }
    return std::nullopt;
}

std::optional<FieldProblem> settings_problem(const store::TargetSettings& target,
                                             std::string_view kind) {
    if (const auto* body = option(target, "body"); body && *body != "input" && *body != "task") {
        return problem("body", "body must be \"input\" or \"task\"");
    }
    if (target.signing_secret) {
        return problem("signing_secret", std::string{kind} + " targets are not signed");
    }
    if (!target.headers.empty()) {
        return problem("headers", std::string{kind} + " targets send the task's headers only");
    }
    for (const auto& [name, value] : target.credentials) {
        if (value.empty() || value.size() > kMaxCredentialBytes ||
            value.find('\0') != std::string::npos) {
            return problem(name, name + " must be 1 to " + std::to_string(kMaxCredentialBytes) +
                                     " bytes without NUL");
        }
        if (util::SecretBox::is_sealed(value)) {
            return problem(name,
                           name + " may not begin with '" + std::string{util::kSealedPrefix} + "'");
        }
    }
    const auto* user = option(target, "user");
    if (user != nullptr &&
        (user->empty() || user->size() > kMaxUserBytes || user->find('\0') != std::string::npos)) {
        return problem("user",
                       "user must be 1 to " + std::to_string(kMaxUserBytes) + " bytes without NUL");
    }
    if (target.credentials.contains("password") && user == nullptr) {
        return problem("password", "a password needs a user");
    }
    return path_problem(target.ca_file ? &*target.ca_file : nullptr, "ca_file");
}

}  // namespace outboxd::sinks::broker
