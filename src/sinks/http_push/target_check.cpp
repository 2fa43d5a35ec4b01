#include "outboxd/sinks/http_push/target_check.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>

#include "outboxd/sinks/http_push/address_class.hpp"
#include "outboxd/util/secret_box.hpp"
#include "outboxd/util/untrusted_text.hpp"

namespace outboxd::sinks::http_push {
namespace {

namespace ip = boost::asio::ip;

std::string lower(std::string_view text) {
    std::string out{text};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t");
    return std::string{text.substr(first, last - first + 1)};
}

// The bytes of a numeric address, and whether it is written as IPv6 (the prefix of an IPv4
// CIDR block counts 32 bits), or nothing.
std::optional<AddressBytes> written_address(std::string_view text, bool& v6) {
    v6 = text.find(':') != std::string_view::npos;
    return address_bytes(text);
}

// RFC 6761: "localhost" and the names under it are the host itself, whatever DNS says.
bool loopback_name(std::string_view host) {
    while (host.ends_with('.')) host.remove_suffix(1);  // "localhost." is the same name
    return host == "localhost" || host.ends_with(".localhost");
}

// The IPv4 address a host "name" spells in a shorthand the system resolver still takes as
// numeric ("127.1", "2130706433", "0x7f.0.0.1"), as a dotted quad; or nothing.
std::optional<std::string> shorthand_ipv4(const std::string& host) {
    ::in_addr parsed{};
    if (::inet_aton(host.c_str(), &parsed) == 0) return std::nullopt;
    return ip::address_v4{ntohl(parsed.s_addr)}.to_string();
}

// Why `address` is refused by its class, and how to allow it.
std::string class_problem(const TargetUrl& url, std::string_view address, AddressClass kind,
                          bool name_listed) {
    const auto name = std::string{class_name(kind)};
    const auto described = (name.front() == 'u' ? "an " : "a ") + name + " address (" +
                           std::string{class_ranges(kind)} + ")";
    auto why = url.host_is_address ? "host " + std::string{address} + " is " + described
                                   : "host '" + url.host + "' resolves to " + std::string{address} +
                                         ", " + described;
    why +=
        ", allowed only when OUTBOXD_HTTP_ALLOWED_HOSTS lists that address or a CIDR block "
        "holding it";
    if (name_listed) why += " (listing the host name is not enough)";
    return why;
}

bool is_token_char(unsigned char c) {
    // RFC 9110 tchar.
    return std::isalnum(c) != 0 ||
           std::string_view{"!#$%&'*+-.^_`|~"}.find(static_cast<char>(c)) != std::string_view::npos;
}

// Headers outboxd sets itself or that would change how the request is framed or routed.
bool reserved_header(std::string_view name) {
    static const std::set<std::string, std::less<>> reserved{"host",
                                                             "content-length",
                                                             "content-type",
                                                             "transfer-encoding",
                                                             "connection",
                                                             "keep-alive",
                                                             "te",
                                                             "trailer",
                                                             "upgrade",
                                                             "expect",
                                                             "proxy-connection"};
    const auto folded = lower(name);
    return reserved.contains(folded) || folded.starts_with("outboxd-");
}

std::optional<std::string> header_problem(const std::string& name, const std::string& value) {
    if (name.empty() || name.size() > kMaxHeaderNameBytes) {
        return "a header name must be 1 to " + std::to_string(kMaxHeaderNameBytes) + " bytes";
    }
    if (!std::all_of(name.begin(), name.end(),
                     [](char c) { return is_token_char(static_cast<unsigned char>(c)); })) {
        return "header name '" + util::sanitize_text(name, 80) +
               "' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~)";
    }
    if (reserved_header(name)) {
        return "header '" + name + "' is set by outboxd and cannot be configured";
    }
    if (util::SecretBox::is_sealed(value)) {
        return "the value of header '" + name + "' may not begin with '" +
               std::string{util::kSealedPrefix} + "' (the mark of an encrypted value)";
    }
    if (value.size() > kMaxHeaderValueBytes) {
        return "the value of header '" + name + "' is longer than " +
               std::to_string(kMaxHeaderValueBytes) + " bytes";
    }
    if (!std::all_of(value.begin(), value.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return u == '\t' || (u >= 0x20 && u < 0x7f);
        })) {
        return "the value of header '" + name +
               "' may hold only printable ASCII, spaces and tabs (no line breaks)";
    }
    return std::nullopt;
}

// Each non-empty, trimmed entry of a comma-separated list.
template <typename Visit>
void for_each_entry(std::string_view list, Visit visit) {
    std::size_t start = 0;
    while (start <= list.size()) {
        const auto comma = list.find(',', start);
        const auto entry =
            trim(list.substr(start, comma == std::string_view::npos ? list.npos : comma - start));
        start = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
        if (!entry.empty()) visit(entry);
    }
}

std::optional<FieldProblem> problem(std::string field, std::string message) {
    return FieldProblem{std::move(field), std::move(message)};
}

}  // namespace

std::optional<std::string> url_problem(std::string_view url) {
    if (url.empty()) return std::string{"must not be empty"};
    if (url.size() > kMaxUrlBytes) {
        return "is longer than " + std::to_string(kMaxUrlBytes) + " bytes";
    }
    const auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) return std::string{"is not an absolute URL (http://host/path or https://…)"};
    const auto scheme = lower(parsed->scheme());
    if (scheme != "http" && scheme != "https") {
        return "must use http or https, not '" + util::sanitize_text(scheme, 40) + "'";
    }
    if (!parsed->has_authority() || parsed->encoded_host().empty()) {
        return std::string{"must name a host"};
    }
    if (parsed->has_userinfo()) {
        return std::string{"must not hold user info (credentials go in headers)"};
    }
    if (parsed->has_fragment()) return std::string{"must not hold a fragment ('#…')"};
    if (parsed->has_port()) {
        const auto port = parsed->port();
        if (port.empty() || parsed->port_number() == 0 ||
            !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
            port.size() > 5 || std::stoi(std::string{port}) > 65535) {
            return "port '" + util::sanitize_text(port, 20) + "' is not between 1 and 65535";
        }
    }
    const auto host = parsed->host_type();
    if (host == boost::urls::host_type::ipvfuture) {
        return std::string{"names an IPvFuture host, which outboxd cannot reach"};
    }
    return std::nullopt;
}

std::string url_without_query(std::string_view url) {
    const auto query = url.find('?');
    if (query == std::string_view::npos) return std::string{url};
    return std::string{url.substr(0, query)} + "?…";
}

std::optional<TargetUrl> parse_target_url(std::string_view url) {
    if (url_problem(url)) return std::nullopt;
    const auto parsed = boost::urls::parse_absolute_uri(url);
    TargetUrl out;
    out.tls = lower(parsed->scheme()) == "https";
    switch (parsed->host_type()) {
        case boost::urls::host_type::ipv4:
            out.host = parsed->host_ipv4_address().to_string();
            out.host_is_address = true;
            break;
        case boost::urls::host_type::ipv6:
            out.host = parsed->host_ipv6_address().to_string();
            out.host_is_address = true;
            break;
        default:
            out.host = lower(parsed->host_address());
            break;
    }
    out.port = parsed->has_port() ? parsed->port_number() : (out.tls ? 443 : 80);
    std::string path{parsed->encoded_path()};
    if (path.empty()) path = "/";
    if (parsed->has_query()) path += "?" + std::string{parsed->encoded_query()};
    out.target = std::move(path);
    out.host_header = std::string{parsed->encoded_host_and_port()};
    return out;
}

std::optional<std::string> HostPolicy::list_problem(std::string_view list) {
    std::optional<std::string> found;
    for_each_entry(list, [&found](const std::string& entry) {
        if (found) return;
        if (const auto slash = entry.find('/'); slash != std::string::npos) {
            bool v6 = false;
            const auto bytes = written_address(entry.substr(0, slash), v6);
            const auto bits = entry.substr(slash + 1);
            const bool digits =
                !bits.empty() && bits.size() <= 3 &&
                std::all_of(bits.begin(), bits.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (!bytes || !digits || std::stoi(bits) > (v6 ? 128 : 32)) {
                found = "'" + util::sanitize_text(entry, 80) + "' is not a CIDR block";
            }
            return;
        }
        const auto name = entry.starts_with("*.") ? entry.substr(2) : entry;
        if (address_bytes(name)) return;
        const bool host_chars = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
        });
        if (!host_chars) {
            found = "'" + util::sanitize_text(entry, 80) +
                    "' is neither a host name, a '*.' suffix, an address nor a CIDR block";
        }
    });
    return found;
}

HostPolicy HostPolicy::parse(std::string_view list) {
    HostPolicy policy;
    for_each_entry(list, [&policy](const std::string& entry) {
        const auto slash = entry.find('/');
        Block block;
        const auto address = slash == std::string::npos ? entry : entry.substr(0, slash);
        if (const auto bytes = written_address(address, block.v6)) {
            block.bytes = *bytes;
            const int full = 128;
            if (slash == std::string::npos) {
                block.prefix = full;
            } else {
                try {
                    const int bits = std::stoi(entry.substr(slash + 1));
                    block.prefix = block.v6 ? bits : 96 + bits;
                } catch (const std::exception&) {
                    return;
                }
            }
            block.prefix = std::clamp(block.prefix, 0, full);
            policy.blocks_.push_back(block);
            return;
        }
        if (slash != std::string::npos) return;
        policy.names_.push_back(entry.starts_with("*.") ? lower(entry.substr(1)) : lower(entry));
    });
    return policy;
}

bool HostPolicy::name_allowed(std::string_view host) const {
    const auto folded = lower(host);
    return std::any_of(names_.begin(), names_.end(), [&folded](const std::string& name) {
        if (name.starts_with(".")) return folded.ends_with(name) && folded.size() > name.size();
        return folded == name;
    });
}

bool HostPolicy::in_blocks(const AddressBytes& address) const {
    return std::any_of(blocks_.begin(), blocks_.end(), [&address](const Block& block) {
        return prefix_matches(address, block.bytes, block.prefix);
    });
}

bool HostPolicy::holds_loopback() const {
    static const AddressBytes loopback_v4 = address_bytes("127.0.0.1").value();
    static const AddressBytes loopback_v6 = address_bytes("::1").value();
    return in_blocks(loopback_v4) || in_blocks(loopback_v6);
}

std::optional<std::string> HostPolicy::host_problem(const TargetUrl& url) const {
    if (url.host_is_address) return address_problem(url, url.host);
    // Checked as the address it is, so that the refusal comes now rather than at each try.
    if (const auto address = shorthand_ipv4(url.host)) return address_problem(url, *address);
    // Its addresses are checked again when it is resolved; refusing it now says so at once.
    if (loopback_name(url.host) && !name_allowed(url.host) && !holds_loopback()) {
        return "host '" + url.host + "' names the loopback interface (RFC 6761: " +
               std::string{class_ranges(AddressClass::loopback)} +
               "), allowed only when OUTBOXD_HTTP_ALLOWED_HOSTS lists a loopback address or a "
               "CIDR block holding one (e.g. 127.0.0.1)";
    }
    if (empty()) return std::nullopt;
    if (name_allowed(url.host) || !blocks_.empty()) return std::nullopt;
    return "host '" + url.host + "' is not in OUTBOXD_HTTP_ALLOWED_HOSTS";
}

std::optional<std::string> HostPolicy::address_problem(const TargetUrl& url,
                                                       std::string_view address) const {
    const auto bytes = address_bytes(address);
    if (!bytes) return "'" + util::sanitize_text(address, 80) + "' is not an address";
    const bool held = in_blocks(*bytes);
    const bool name_listed = !url.host_is_address && name_allowed(url.host);
    // A name entry vouches for a name, not for where it resolves: DNS can be re-pointed at an
    // internal address after the name was allowed.
    if (const auto kind = classify(*bytes); kind != AddressClass::global && !held) {
        return class_problem(url, address, kind, name_listed);
    }
    if (empty() || held || name_listed) return std::nullopt;
    return "address " + std::string{address} + " of host '" + url.host +
           "' is not in OUTBOXD_HTTP_ALLOWED_HOSTS";
}

std::optional<FieldProblem> common_target_problem(const store::TargetSettings& target) {
    const auto& name = target.name;
    if (name.empty() || name.size() > kMaxTargetNameBytes ||
        !std::all_of(name.begin(), name.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
                   c == '-';
        })) {
        return problem("name", "a target name is 1 to " + std::to_string(kMaxTargetNameBytes) +
                                   " letters, digits, '.', '_' or '-'");
    }
    if (auto why = util::identifier_problem(target.namespace_name, util::kMaxIdentifierBytes)) {
        return problem("namespace", "namespace " + *why);
    }
    if (auto why = util::identifier_problem(target.task_queue, util::kMaxIdentifierBytes)) {
        return problem("task_queue", "task_queue " + *why);
    }
    // None listed: every type of the namespace and task queue.
    if (target.activity_types.size() > kMaxActivityTypes) {
        return problem("activity_types", "activity_types may list at most " +
                                             std::to_string(kMaxActivityTypes) + " types");
    }
    for (const auto& type : target.activity_types) {
        if (auto why = util::identifier_problem(type, util::kMaxIdentifierBytes)) {
            return problem("activity_types", "an activity type " + *why);
        }
    }
    if (target.max_in_flight < 1 || target.max_in_flight > kMaxTargetInFlight) {
        return problem("max_in_flight",
                       "max_in_flight must be between 1 and " + std::to_string(kMaxTargetInFlight));
    }
    if (target.timeout_ms < 1 || target.timeout_ms > kMaxTargetTimeoutMs) {
        return problem("timeout_ms",
                       "timeout_ms must be between 1 and " + std::to_string(kMaxTargetTimeoutMs));
    }
    return std::nullopt;
}

std::optional<FieldProblem> check_target(const store::TargetSettings& target,
                                         const HostPolicy& policy) {
    if (auto common = common_target_problem(target)) return common;
    if (auto why = url_problem(target.url)) return problem("url", "url " + *why);
    if (auto why = policy.host_problem(*parse_target_url(target.url))) {
        return problem("url", "url " + *why);
    }
    if (target.signing_secret) {
        const auto& secret = *target.signing_secret;
        if (secret.empty() || secret.size() > kMaxSecretBytes ||
            secret.find('\0') != std::string::npos) {
            return problem("signing_secret", "signing_secret must be 1 to " +
                                                 std::to_string(kMaxSecretBytes) +
                                                 " bytes without NUL");
        }
        if (util::SecretBox::is_sealed(secret)) {
            return problem("signing_secret", "signing_secret may not begin with '" +
                                                 std::string{util::kSealedPrefix} +
                                                 "' (the mark of an encrypted value)");
        }
    }
    if (target.headers.size() > kMaxHeaders) {
        return problem("headers",
                       "at most " + std::to_string(kMaxHeaders) + " headers may be configured");
    }
    std::set<std::string> seen;
    for (const auto& [header, value] : target.headers) {
        if (auto why = header_problem(header, value)) return problem("headers", *why);
        if (!seen.insert(lower(header)).second) {
            return problem("headers", "header '" + header + "' is given twice");
        }
    }
    if (target.ca_file) {
        const auto& path = *target.ca_file;
        if (path.empty() || path.front() != '/' || path.size() > kMaxPathBytes ||
            path.find('\0') != std::string::npos) {
            return problem("ca_file", "ca_file must be an absolute path of at most " +
                                          std::to_string(kMaxPathBytes) + " bytes");
        }
        if (!parse_target_url(target.url)->tls) {
            return problem("ca_file", "ca_file applies to https targets only");
        }
    }
    return std::nullopt;
}

}  // namespace outboxd::sinks::http_push
