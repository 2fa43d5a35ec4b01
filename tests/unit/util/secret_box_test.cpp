// The AES-256-GCM box of secrets at rest: round trips, refusal of anything altered, moved or
// sealed under another key, rotation, and key lists refused without quoting a key.

#include <set>

#include <catch2/catch.hpp>

#include "outboxd/util/secret_box.hpp"

using Catch::Contains;
using outboxd::util::SecretBox;

namespace {

// base64 of the bytes 0..31, 100..131, and 0..30 (one short).
constexpr const char* kKeyA = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr const char* kKeyB = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
constexpr const char* kShortKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==";

std::string keys(std::initializer_list<std::pair<const char*, const char*>> list) {
    std::string out;
    for (const auto& [id, key] : list)
        out += (out.empty() ? "" : ",") + std::string{id} + ":" + key;
    return out;
}

// `sealed` with one character of its base64 body changed at `offset` from the body's start.
std::string flipped(std::string sealed, std::size_t offset) {
    const auto body = sealed.rfind(':') + 1;
    auto& c = sealed.at(body + offset);
    c = c == 'A' ? 'B' : 'A';
    return sealed;
}

}  // namespace

TEST_CASE("a sealed value opens to its plain text in its own context only", "[unit][secrets]") {
    const auto box = SecretBox::parse(keys({{"k1", kKeyA}}));
    const auto sealed = box.seal("s3cret value", "http_target:hook:signing_secret");
    CHECK(sealed.starts_with("enc:v1:k1:"));
    CHECK(sealed.find("s3cret") == std::string::npos);
    CHECK(SecretBox::is_sealed(sealed));
    CHECK(SecretBox::key_id_of(sealed) == "k1");
    CHECK_FALSE(SecretBox::is_sealed("s3cret value"));

    const auto opened = box.open(sealed, "http_target:hook:signing_secret");
    REQUIRE(opened.ok());
    CHECK(opened.text == "s3cret value");

    // The context is authenticated: a value moved to another target or field does not open.
    const auto moved = box.open(sealed, "http_target:other:signing_secret");
    CHECK_FALSE(moved.ok());
    CHECK(moved.text.empty());
    CHECK_FALSE(box.open(sealed, "http_target:hook:header:Authorization").ok());

    // A fresh nonce each time: the same value never seals to the same text.
    std::set<std::string> seen;
    for (int i = 0; i < 20; ++i) seen.insert(box.seal("same", "ctx"));
    CHECK(seen.size() == 20);

    // Empty text and binary bytes survive too.
    CHECK(box.open(box.seal("", "ctx"), "ctx").ok());
    const std::string binary{"\0\x01\xff tail", 8};
    CHECK(box.open(box.seal(binary, "ctx"), "ctx").text == binary);
}

TEST_CASE("an altered nonce, ciphertext or tag fails authentication", "[unit][secrets]") {
    const auto box = SecretBox::parse(keys({{"k1", kKeyA}}));
    const auto sealed = box.seal("a secret of some length", "ctx");
    const auto body_size = sealed.size() - sealed.rfind(':') - 1;
    // Characters 0..15 of the body carry the nonce, the middle the ciphertext, the last
    // ones (before padding) the tag.
    for (const std::size_t offset : {std::size_t{0}, std::size_t{18}, body_size - 4}) {
        INFO("offset " << offset);
        const auto opened = box.open(flipped(sealed, offset), "ctx");
        CHECK_FALSE(opened.ok());
        CHECK_THAT(opened.problem, Contains("does not decrypt with key id 'k1'"));
    }
    // Cut short, or no longer base64.
    CHECK_THAT(box.open(sealed.substr(0, sealed.size() - 8), "ctx").problem,
               Contains("does not decrypt") || Contains("not a well-formed"));
    CHECK_THAT(box.open("enc:v1:k1:AAAA", "ctx").problem, Contains("not a well-formed"));
    CHECK_THAT(box.open("enc:v1:k1:not base64!", "ctx").problem, Contains("not a well-formed"));
    CHECK_THAT(box.open("enc:v2:k1:AAAA", "ctx").problem, Contains("format"));
    CHECK_THAT(box.open("plain", "ctx").problem, Contains("not an encrypted value"));
}

TEST_CASE("a value sealed under another key does not open", "[unit][secrets]") {
    const auto a = SecretBox::parse(keys({{"k1", kKeyA}}));
    const auto b = SecretBox::parse(keys({{"k1", kKeyB}}));  // same id, other bytes
    const auto other_id = SecretBox::parse(keys({{"k2", kKeyB}}));
    const auto sealed = a.seal("secret", "ctx");
    CHECK_THAT(b.open(sealed, "ctx").problem, Contains("does not decrypt with key id 'k1'"));
    const auto unknown = other_id.open(sealed, "ctx");
    CHECK_FALSE(unknown.ok());
    CHECK_THAT(unknown.problem, Contains("key id 'k1'") && Contains("not among"));
}

TEST_CASE("rotation: the first key seals, every listed key opens", "[unit][secrets]") {
    const auto old_box = SecretBox::parse(keys({{"old", kKeyA}}));
    const auto sealed_old = old_box.seal("hook secret", "ctx");

    const auto rotated = SecretBox::parse(keys({{"new", kKeyB}, {"old", kKeyA}}));
    CHECK(rotated.sealing_key_id() == "new");
    CHECK(rotated.holds("old"));
    CHECK(rotated.open(sealed_old, "ctx").text == "hook secret");
    const auto sealed_new = rotated.seal("hook secret", "ctx");
    CHECK(SecretBox::key_id_of(sealed_new) == "new");
    CHECK(rotated.open(sealed_new, "ctx").text == "hook secret");

    // With the old key retired, its values no longer open; the new ones still do.
    const auto retired = SecretBox::parse(keys({{"new", kKeyB}}));
    CHECK_FALSE(retired.open(sealed_old, "ctx").ok());
    CHECK(retired.open(sealed_new, "ctx").ok());
    CHECK_FALSE(old_box.open(sealed_new, "ctx").ok());
}

TEST_CASE("a bad key list is refused, naming the entry and never quoting the key",
          "[unit][secrets]") {
    CHECK_FALSE(SecretBox::keys_problem(keys({{"k1", kKeyA}})));
    CHECK_FALSE(SecretBox::keys_problem(" k2:" + std::string{kKeyB} + " , k1:" + kKeyA));

    const auto problem = [](const std::string& list) {
        const auto found = SecretBox::keys_problem(list);
        REQUIRE(found);
        CHECK(found->find(kKeyA) == std::string::npos);
        CHECK(found->find("AAECAw") == std::string::npos);
        return *found;
    };
    CHECK_THAT(problem(""), Contains("entry 1"));
    CHECK_THAT(problem(kKeyA), Contains("entry 1 is not '<key id>:<base64 of 32 bytes>'"));
    CHECK_THAT(problem(keys({{"k1", kKeyA}}) + ","), Contains("entry 2"));
    CHECK_THAT(problem(keys({{"k 1", kKeyA}})), Contains("a key id is"));
    CHECK_THAT(problem(keys({{"k1", kShortKey}})),
               Contains("key id 'k1'") && Contains("31 bytes; AES-256 takes 32"));
    CHECK_THAT(problem("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"), Contains("base64"));
    CHECK_THAT(problem("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd*h8="), Contains("base64"));
    CHECK_THAT(problem(keys({{"k1", kKeyA}, {"k1", kKeyB}})), Contains("given twice"));
    CHECK_THROWS_AS(SecretBox::parse("nonsense"), std::invalid_argument);
}
