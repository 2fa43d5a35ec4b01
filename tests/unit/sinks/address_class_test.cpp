// Address classes for HTTP push targets: each class, both edges of each range and the
// addresses just outside them, IPv6 forms that carry IPv4 addresses, and public addresses.

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "outboxd/sinks/http_push/address_class.hpp"

namespace push = outboxd::sinks::http_push;
using push::AddressClass;

namespace {

using Expected = std::vector<std::pair<std::string, AddressClass>>;

void check_classes(const Expected& expected) {
    for (const auto& [text, kind] : expected) {
        INFO(text);
        const auto got = push::classify_address(text);
        REQUIRE(got.has_value());
        CHECK(push::class_name(*got) == push::class_name(kind));
    }
}

}  // namespace

TEST_CASE("loopback: 127.0.0.0/8 and ::1", "[unit][push][address]") {
    check_classes({{"127.0.0.0", AddressClass::loopback},
                   {"127.0.0.1", AddressClass::loopback},
                   {"127.255.255.255", AddressClass::loopback},
                   {"126.255.255.255", AddressClass::global},
                   {"128.0.0.0", AddressClass::global},
                   {"::1", AddressClass::loopback},
                   {"0:0:0:0:0:0:0:1", AddressClass::loopback}});
}

TEST_CASE("unspecified: 0.0.0.0/8 and ::", "[unit][push][address]") {
    check_classes({{"0.0.0.0", AddressClass::unspecified},
                   {"0.0.0.1", AddressClass::unspecified},
                   {"0.255.255.255", AddressClass::unspecified},
                   {"1.0.0.0", AddressClass::global},
                   {"::", AddressClass::unspecified}});
}

TEST_CASE("private: RFC 1918 and fc00::/7", "[unit][push][address]") {
    check_classes({{"10.0.0.0", AddressClass::private_network},
                   {"10.255.255.255", AddressClass::private_network},
                   {"9.255.255.255", AddressClass::global},
                   {"11.0.0.0", AddressClass::global},
                   {"172.16.0.0", AddressClass::private_network},
                   {"172.31.255.255", AddressClass::private_network},
                   {"172.15.255.255", AddressClass::global},
                   {"172.32.0.0", AddressClass::global},
                   {"192.168.0.0", AddressClass::private_network},
                   {"192.168.255.255", AddressClass::private_network},
                   {"192.167.255.255", AddressClass::global},
                   {"192.169.0.0", AddressClass::global},
                   {"fc00::", AddressClass::private_network},
                   {"fd12:3456::1", AddressClass::private_network},
                   {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AddressClass::private_network},
                   {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AddressClass::global},
                   {"fe00::", AddressClass::global}});
}

TEST_CASE("link-local: 169.254.0.0/16 and fe80::/10", "[unit][push][address]") {
    check_classes({{"169.254.0.0", AddressClass::link_local},
                   {"169.254.255.255", AddressClass::link_local},
                   {"169.253.255.255", AddressClass::global},
                   {"169.255.0.0", AddressClass::global},
                   {"fe80::", AddressClass::link_local},
                   {"fe80::1%1", AddressClass::link_local},  // with a zone, as resolved
                   {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AddressClass::link_local},
                   {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AddressClass::global},
                   {"fec0::", AddressClass::global}});
}

TEST_CASE("carrier-grade NAT: 100.64.0.0/10", "[unit][push][address]") {
    check_classes({{"100.64.0.0", AddressClass::carrier_grade_nat},
                   {"100.127.255.255", AddressClass::carrier_grade_nat},
                   {"100.63.255.255", AddressClass::global},
                   {"100.128.0.0", AddressClass::global}});
}

TEST_CASE("cloud metadata addresses win over the ranges that hold them", "[unit][push][address]") {
    check_classes({{"169.254.169.254", AddressClass::cloud_metadata},
                   {"169.254.169.253", AddressClass::link_local},
                   {"169.254.169.255", AddressClass::link_local},
                   {"fd00:ec2::254", AddressClass::cloud_metadata},
                   {"fd00:ec2::253", AddressClass::private_network},
                   {"100.100.100.200", AddressClass::cloud_metadata},
                   {"100.100.100.201", AddressClass::carrier_grade_nat}});
}

TEST_CASE("IPv6 forms of IPv4 addresses are classed by the IPv4 address", "[unit][push][address]") {
    check_classes({// IPv4-mapped
                   {"::ffff:127.0.0.1", AddressClass::loopback},
                   {"::ffff:7f00:1", AddressClass::loopback},
                   {"::ffff:0.0.0.0", AddressClass::unspecified},
                   {"::ffff:10.1.2.3", AddressClass::private_network},
                   {"::ffff:169.254.169.254", AddressClass::cloud_metadata},
                   {"::ffff:100.64.0.1", AddressClass::carrier_grade_nat},
                   {"::ffff:8.8.8.8", AddressClass::global},
                   // IPv4-compatible (deprecated, still parsed)
                   {"::127.0.0.1", AddressClass::loopback},
                   {"::192.168.1.1", AddressClass::private_network},
                   {"::0.0.0.2", AddressClass::unspecified},
                   {"::8.8.8.8", AddressClass::global},
                   // NAT64, the well-known prefix
                   {"64:ff9b::127.0.0.1", AddressClass::loopback},
                   {"64:ff9b::a9fe:a9fe", AddressClass::cloud_metadata},
                   {"64:ff9b::8.8.8.8", AddressClass::global}});
}

TEST_CASE("public addresses are global", "[unit][push][address]") {
    check_classes({{"8.8.8.8", AddressClass::global},
                   {"1.1.1.1", AddressClass::global},
                   {"203.0.113.5", AddressClass::global},
                   {"255.255.255.255", AddressClass::global},
                   {"2001:4860:4860::8888", AddressClass::global},
                   {"2606:4700:4700::1111", AddressClass::global},
                   {"64:ff9c::127.0.0.1", AddressClass::global}});  // not the NAT64 prefix
}

TEST_CASE("only numeric addresses are classed", "[unit][push][address]") {
    CHECK_FALSE(push::classify_address(""));
    CHECK_FALSE(push::classify_address("localhost"));
    CHECK_FALSE(push::classify_address("127.1"));  // shorthand: the host check handles it
    CHECK_FALSE(push::classify_address("10.0.0.0/8"));
    CHECK_FALSE(push::classify_address("::g"));
}

TEST_CASE("each class has a name and its ranges for messages", "[unit][push][address]") {
    CHECK(push::class_name(AddressClass::global) == "public");
    CHECK(push::class_name(AddressClass::loopback) == "loopback");
    CHECK(push::class_name(AddressClass::unspecified) == "unspecified");
    CHECK(push::class_name(AddressClass::private_network) == "private");
    CHECK(push::class_name(AddressClass::link_local) == "link-local");
    CHECK(push::class_name(AddressClass::carrier_grade_nat) == "carrier-grade NAT");
    CHECK(push::class_name(AddressClass::cloud_metadata) == "cloud metadata");
    CHECK(push::class_ranges(AddressClass::loopback) == "127.0.0.0/8, ::1");
    CHECK(push::class_ranges(AddressClass::unspecified) == "0.0.0.0/8, ::");
    CHECK(push::class_ranges(AddressClass::private_network) ==
          "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7");
    CHECK(push::class_ranges(AddressClass::link_local) == "169.254.0.0/16, fe80::/10");
    CHECK(push::class_ranges(AddressClass::carrier_grade_nat) == "100.64.0.0/10");
    CHECK(push::class_ranges(AddressClass::cloud_metadata) ==
          "169.254.169.254, fd00:ec2::254, 100.100.100.200");
    CHECK(push::class_ranges(AddressClass::global).empty());
}
