#include "outboxd/sinks/http_push/address_class.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace outboxd::sinks::http_push {
namespace {

namespace ip = boost::asio::ip;

constexpr int kIpv4MappedBits = 96;  // ::ffff:0:0/96 holds IPv4 in the last 32 bits
constexpr int kAddressBits = 128;

struct RangeText {
    std::string_view cidr;
    AddressClass kind;
};

// Every range a class covers, each spelled once: classify() and the messages' list of
// ranges both read it. Most specific first, since the first range holding an address names
// its class (169.254.169.254 is cloud metadata before it is link-local).
constexpr std::array kRanges{
    RangeText{"169.254.169.254/32", AddressClass::cloud_metadata},  // AWS, GCP, Azure, …
    RangeText{"fd00:ec2::254/128", AddressClass::cloud_metadata},   // AWS over IPv6
    RangeText{"100.100.100.200/32", AddressClass::cloud_metadata},  // Alibaba Cloud
    RangeText{"127.0.0.0/8", AddressClass::loopback},
    RangeText{"::1/128", AddressClass::loopback},
    RangeText{"0.0.0.0/8", AddressClass::unspecified},
    RangeText{"::/128", AddressClass::unspecified},
    RangeText{"10.0.0.0/8", AddressClass::private_network},
    RangeText{"172.16.0.0/12", AddressClass::private_network},
    RangeText{"192.168.0.0/16", AddressClass::private_network},
    RangeText{"fc00::/7", AddressClass::private_network},
    RangeText{"169.254.0.0/16", AddressClass::link_local},
    RangeText{"fe80::/10", AddressClass::link_local},
    RangeText{"100.64.0.0/10", AddressClass::carrier_grade_nat},
};

struct Range {
    AddressBytes network{};
    int prefix = 0;
    AddressClass kind = AddressClass::global;
};

struct Catalogue {
    std::vector<Range> ranges;
    std::map<AddressClass, std::string> listed;  // "127.0.0.0/8, ::1"
};

Catalogue build_catalogue() {
    Catalogue out;
    for (const auto& [cidr, kind] : kRanges) {
        const auto slash = cidr.find('/');
        const auto address = cidr.substr(0, slash);
        const bool v6 = address.find(':') != std::string_view::npos;
        const int bits = std::stoi(std::string{cidr.substr(slash + 1)});
        const int prefix = v6 ? bits : kIpv4MappedBits + bits;
        out.ranges.push_back({address_bytes(address).value(), prefix, kind});
        auto& listed = out.listed[kind];
        if (!listed.empty()) listed += ", ";
        listed += prefix == kAddressBits ? address : cidr;
    }
    return out;
}

const Catalogue& catalogue() {
    static const Catalogue built = build_catalogue();
    return built;
}

// An IPv6 address that carries an IPv4 one, as the IPv4-mapped form of that IPv4 address:
// a connection to it reaches the IPv4 address (NAT64 translates; an IPv4-compatible address
// is the IPv4 one to stacks that still accept it).
AddressBytes carried_ipv4(const AddressBytes& address) {
    static const AddressBytes zero{};
    static const AddressBytes nat64 = address_bytes("64:ff9b::").value();
    // :: and ::1 share the IPv4-compatible prefix but are themselves, not 0.0.0.0 and 0.0.0.1.
    const bool compatible = prefix_matches(address, zero, kIpv4MappedBits) &&
                            !prefix_matches(address, zero, kAddressBits - 1);
    if (!compatible && !prefix_matches(address, nat64, kIpv4MappedBits)) return address;
    AddressBytes mapped{};
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    std::copy(address.begin() + 12, address.end(), mapped.begin() + 12);
    return mapped;
}

}  // namespace

std::optional<AddressBytes> address_bytes(std::string_view text) {
    boost::system::error_code ec;
    const auto address = ip::make_address(std::string{text}, ec);
    if (ec) return std::nullopt;
    if (address.is_v4()) return ip::make_address_v6(ip::v4_mapped, address.to_v4()).to_bytes();
    return address.to_v6().to_bytes();
}

bool prefix_matches(const AddressBytes& a, const AddressBytes& b, int prefix) {
    for (int bit = 0; bit < prefix && bit < kAddressBits; ++bit) {
        const auto mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
        if ((a[bit / 8] & mask) != (b[bit / 8] & mask)) return false;
    }
    return true;
}

AddressClass classify(const AddressBytes& address) {
    const auto bytes = carried_ipv4(address);
    for (const auto& range : catalogue().ranges) {
        if (prefix_matches(bytes, range.network, range.prefix)) return range.kind;
    }
    return AddressClass::global;
}

std::optional<AddressClass> classify_address(std::string_view text) {
    const auto bytes = address_bytes(text);
    if (!bytes) return std::nullopt;
    return classify(*bytes);
}

std::string_view class_name(AddressClass kind) {
    switch (kind) {
        case AddressClass::global:
            return "public";
        case AddressClass::loopback:
            return "loopback";
        case AddressClass::unspecified:
            return "unspecified";
        case AddressClass::private_network:
            return "private";
        case AddressClass::link_local:
            return "link-local";
        case AddressClass::carrier_grade_nat:
            return "carrier-grade NAT";
        case AddressClass::cloud_metadata:
            return "cloud metadata";
    }
    return "unknown";
}

std::string_view class_ranges(AddressClass kind) {
    const auto& listed = catalogue().listed;
    const auto found = listed.find(kind);
    return found == listed.end() ? std::string_view{} : std::string_view{found->second};
}

}  // namespace outboxd::sinks::http_push
