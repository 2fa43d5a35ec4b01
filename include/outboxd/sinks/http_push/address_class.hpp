#pragma once

// Which kind of network an IP address belongs to. HTTP push targets may not reach the node's
// own host, internal networks or a cloud's metadata service unless the allow-list holds the
// address (README, "HTTP push"): a target URL is untrusted input, and a node usually sits
// where such addresses answer. Pure; nothing here resolves a name.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace outboxd::sinks::http_push {

// An address as 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so that one prefix
// comparison serves both families.
using AddressBytes = std::array<std::uint8_t, 16>;

enum class AddressClass {
    global,             // none of the below: reachable by default
    loopback,           // 127.0.0.0/8, ::1
    unspecified,        // 0.0.0.0/8, :: (Linux connects 0.0.0.0 to the host itself)
    private_network,    // RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16; fc00::/7
    link_local,         // 169.254.0.0/16, fe80::/10
    carrier_grade_nat,  // 100.64.0.0/10
    cloud_metadata,     // 169.254.169.254, fd00:ec2::254, 100.100.100.200
};

// The bytes of a numeric IPv4 or IPv6 address (a zone, "%eth0", is ignored), or nothing.
[[nodiscard]] std::optional<AddressBytes> address_bytes(std::string_view text);
// Whether the first `prefix` bits (0..128) of `a` and `b` agree.
[[nodiscard]] bool prefix_matches(const AddressBytes& a, const AddressBytes& b, int prefix);

// The class of an address. An IPv6 address that carries an IPv4 one (IPv4-mapped
// ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d) is classed by that
// IPv4 address, where a connection to it ends up. The most specific class wins: a
// metadata address is not reported as link-local, private or carrier-grade NAT.
[[nodiscard]] AddressClass classify(const AddressBytes& address);
// The same for a numeric address as text; nothing when `text` is not one.
[[nodiscard]] std::optional<AddressClass> classify_address(std::string_view text);

// The class as messages name it ("loopback", "cloud metadata") and its ranges
// ("127.0.0.0/8, ::1").
[[nodiscard]] std::string_view class_name(AddressClass kind);
[[nodiscard]] std::string_view class_ranges(AddressClass kind);

}  // namespace outboxd::sinks::http_push
