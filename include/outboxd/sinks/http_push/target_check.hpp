#pragma once

// The rules an HTTP push target must satisfy (README, "HTTP push"): its URL, bounds, header
// names and values, and where it may point. Checked when the API sets a target and again
// when a node reads one (a row written by plain SQL gets no other check). Pure; nothing
// here resolves a name or touches the network.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outboxd/sinks/http_push/address_class.hpp"
#include "outboxd/store/target.hpp"

namespace outboxd::sinks::http_push {

inline constexpr std::size_t kMaxTargetNameBytes = 128;
inline constexpr std::size_t kMaxUrlBytes = 2048;
inline constexpr std::int32_t kMaxTargetInFlight = 10000;
inline constexpr std::int32_t kMaxTargetTimeoutMs = 3'600'000;
inline constexpr std::size_t kMaxSecretBytes = 1024;
inline constexpr std::size_t kMaxHeaders = 32;
inline constexpr std::size_t kMaxHeaderNameBytes = 256;
inline constexpr std::size_t kMaxHeaderValueBytes = 4096;
inline constexpr std::size_t kMaxActivityTypes = 256;
inline constexpr std::size_t kMaxPathBytes = 4096;

// A target's URL, taken apart.
struct TargetUrl {
    bool tls = false;  // https
    std::string host;  // as written, IPv6 without brackets
    std::uint16_t port = 80;
    std::string target = "/";  // path and query, as sent on the request line
    std::string host_header;   // host[:port] for the Host header
    bool host_is_address = false;
};

// Why `url` cannot be a target's URL, or the URL taken apart: absolute http or https, a
// host, no user info (credentials belong in headers), no fragment.
[[nodiscard]] std::optional<std::string> url_problem(std::string_view url);
[[nodiscard]] std::optional<TargetUrl> parse_target_url(std::string_view url);
// `url` as the API shows it: its query, which often carries a token, replaced by "?…". The
// node itself uses the whole URL.
[[nodiscard]] std::string url_without_query(std::string_view url);

// Where targets may point (OUTBOXD_HTTP_ALLOWED_HOSTS): a comma-separated list of host
// names ("hooks.example.com"), name suffixes ("*.example.com"), addresses and CIDR blocks
// ("10.0.0.0/8", "::1/128"). Empty: any host with a public address. Whatever the list says,
// an address of a class other than public (address_class.hpp: loopback, unspecified,
// private, link-local, carrier-grade NAT, cloud metadata) is refused unless an address or
// block of the list holds it; a name entry never vouches for such an address. "localhost"
// and "*.localhost" count as loopback. Immutable once parsed; safe to share across threads.
class HostPolicy {
public:
    HostPolicy() = default;
    // Why `list` is not a valid allow-list, or nothing.
    [[nodiscard]] static std::optional<std::string> list_problem(std::string_view list);
    // The policy of a valid list (call list_problem first; bad entries are skipped).
    [[nodiscard]] static HostPolicy parse(std::string_view list);

    // Whether a target may name `url`'s host (before any name is resolved): an address is
    // checked as address_problem does. A name that no name entry matches passes while the
    // list has address entries: its addresses are checked when it is resolved.
    [[nodiscard]] std::optional<std::string> host_problem(const TargetUrl& url) const;
    // Whether a connection may go to `address` (numeric, as resolved) for `url`.
    [[nodiscard]] std::optional<std::string> address_problem(const TargetUrl& url,
                                                             std::string_view address) const;
    [[nodiscard]] bool empty() const { return names_.empty() && blocks_.empty(); }

private:
    struct Block {
        bool v6 = false;
        AddressBytes bytes{};
        int prefix = 0;
    };
    [[nodiscard]] bool name_allowed(std::string_view host) const;
    [[nodiscard]] bool in_blocks(const AddressBytes& address) const;
    [[nodiscard]] bool holds_loopback() const;

    std::vector<std::string> names_;  // lower case; "*.x" entries kept as ".x"
    std::vector<Block> blocks_;
};

// A problem with one field of a target: the field's name, as in the API body, and why.
struct FieldProblem {
    std::string field;
    std::string message;
};

// The rules every target satisfies whatever its kind: its name, route (namespace, task
// queue, activity types) and bounds (max_in_flight, timeout_ms).
[[nodiscard]] std::optional<FieldProblem> common_target_problem(
    const store::TargetSettings& target);

// Every rule an HTTP target must satisfy, the policy included; the first broken one. A signing
// secret or header value may not begin with "enc:", which marks an encrypted value in the
// database (util::SecretBox): written in clear, it would read as one.
[[nodiscard]] std::optional<FieldProblem> check_target(const store::TargetSettings& target,
                                                       const HostPolicy& policy);

}  // namespace outboxd::sinks::http_push
