#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <variant>

#include <openssl/err.h>

#include "jwt_test_keys.hpp"
#include "outboxd/auth/jwt_verifier.hpp"

using namespace outboxd::auth;
using namespace outboxd::auth::test;
using Json = nlohmann::json;
using Reason = JwtRefusalReason;
using std::chrono::system_clock;

namespace {

const system_clock::time_point kNow{std::chrono::seconds{1'800'000'000}};
const std::int64_t kNowSeconds = 1'800'000'000;
const std::string kIssuer = "https://idp.example.com/realms/acme";
const std::string kAudience = "outboxd";

JwtSettings pem_settings() {
    JwtSettings settings;
    settings.keys_text = public_pem(test_keys().rsa.get()) + public_pem(test_keys().ec.get());
    settings.issuer = kIssuer;
    settings.audience = kAudience;
    return settings;
}

Json claims() {
    return {{"iss", kIssuer},           {"aud", kAudience},
            {"sub", "svc-billing"},     {"iat", kNowSeconds - 10},
            {"exp", kNowSeconds + 600}, {"outboxd", {"billing:worker", "*:admin"}}};
}

Json header(const char* alg, std::optional<std::string> kid = std::nullopt) {
    Json header{{"alg", alg}, {"typ", "JWT"}};
    if (kid) header["kid"] = *kid;
    return header;
}

std::string rs256(const Json& payload, std::optional<std::string> kid = std::nullopt) {
    return signed_token(test_keys().rsa.get(), header("RS256", std::move(kid)), payload);
}

std::string es256(const Json& payload, std::optional<std::string> kid = std::nullopt) {
    return signed_token(test_keys().ec.get(), header("ES256", std::move(kid)), payload);
}

JwtVerifier loaded(const JwtSettings& settings) {
    auto result = JwtVerifier::load(settings);
    if (auto* problem = std::get_if<std::string>(&result)) FAIL("load refused: " << *problem);
    return std::get<JwtVerifier>(std::move(result));
}

std::string load_problem(const JwtSettings& settings) {
    auto result = JwtVerifier::load(settings);
    REQUIRE(std::holds_alternative<std::string>(result));
    return std::get<std::string>(result);
}

std::string load_problem(std::string keys_text) {
    JwtSettings settings;
    settings.keys_text = std::move(keys_text);
    return load_problem(settings);
}

JwtClaims accepted(const JwtVerifier& verifier, const std::string& token,
                   system_clock::time_point now = kNow) {
    auto result = verifier.verify(token, now);
    if (auto* refusal = std::get_if<JwtRefusal>(&result)) FAIL("refused: " << refusal->message);
    return std::get<JwtClaims>(std::move(result));
}

JwtRefusal refused(const JwtVerifier& verifier, const std::string& token,
                   system_clock::time_point now = kNow) {
    auto result = verifier.verify(token, now);
    REQUIRE(std::holds_alternative<JwtRefusal>(result));
    auto refusal = std::get<JwtRefusal>(std::move(result));
    INFO(refusal.message);
    if (!token.empty()) CHECK(refusal.message.find(token) == std::string::npos);  // never the token
    return refusal;
}

// The token with one of its three parts replaced.
std::string with_part(const std::string& token, int index, const std::string& part) {
    const auto first = token.find('.');
    const auto second = token.find('.', first + 1);
    const std::string parts[] = {token.substr(0, first),
                                 token.substr(first + 1, second - first - 1),
                                 token.substr(second + 1)};
    std::string result;
    for (int i = 0; i < 3; ++i) {
        result += (i == index ? part : parts[i]) + (i < 2 ? "." : "");
    }
    return result;
}

bool contains(const std::string& text, std::string_view piece) {
    return text.find(piece) != std::string::npos;
}

}  // namespace

TEST_CASE("RS256 and ES256 tokens verify against PEM public keys", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());
    CHECK(verifier.key_count() == 2);
    for (const auto& token : {rs256(claims()), es256(claims())}) {
        const auto result = accepted(verifier, token);
        CHECK(result.subject == "svc-billing");
        CHECK(result.grants == std::vector<std::string>{"billing:worker", "*:admin"});
        CHECK(result.expires_at == kNow + std::chrono::seconds{600});
    }
    // A copy shares the keys and verifies the same.
    const JwtVerifier copy = verifier;  // NOLINT(performance-unnecessary-copy-initialization)
    accepted(copy, es256(claims()));
    // A kid the PEM keys cannot carry is no reason to refuse.
    accepted(verifier, rs256(claims(), "rotating-key-7"));
}

TEST_CASE("JWKS keys are chosen by kid, or all of the alg's type are tried", "[unit][auth]") {
    auto settings = pem_settings();
    settings.keys_text = Json{
        {"keys",
         {public_jwk(test_keys().rsa.get(), "r1"), public_jwk(test_keys().ec.get(), "e1"),
          public_jwk(test_keys().other_ec.get(),
                     "e2")}}}.dump(2);
    const auto verifier = loaded(settings);
    CHECK(verifier.key_count() == 3);
    accepted(verifier, rs256(claims(), "r1"));
    accepted(verifier, rs256(claims()));
    accepted(verifier, es256(claims(), "e1"));
    accepted(verifier, es256(claims()));  // e2 then e1 or e1 then e2: either verifies
    accepted(verifier, signed_token(test_keys().other_ec.get(), header("ES256", "e2"), claims()));

    // The kid names the key to use: a token signed by e1's key but naming e2 fails.
    const auto wrong_kid = refused(verifier, es256(claims(), "e2"));
    CHECK(wrong_kid.reason == Reason::signature);
    CHECK(contains(wrong_kid.message, "kid 'e2'"));
    const auto unknown_kid = refused(verifier, rs256(claims(), "gone"));
    CHECK(unknown_kid.reason == Reason::no_key);
    CHECK(contains(unknown_kid.message, "no RS256 key with kid 'gone'"));
    // A kid naming a key of the other type does not lend that key to this alg.
    CHECK(refused(verifier, rs256(claims(), "e1")).reason == Reason::no_key);

    SECTION("keys without kid are tried for any kid") {
        settings.keys_text = Json{{"keys", {public_jwk(test_keys().ec.get())}}}.dump();
        const auto anonymous = loaded(settings);
        accepted(anonymous, es256(claims(), "whatever"));
        accepted(anonymous, es256(claims()));
    }
    SECTION("keys for encryption or for other algs are passed over") {
        auto enc = public_jwk(test_keys().rsa.get(), "enc");
        enc["use"] = "enc";
        auto ps = public_jwk(test_keys().rsa.get(), "ps");
        ps["alg"] = "PS256";
        auto sig = public_jwk(test_keys().ec.get(), "sig");
        sig["use"] = "sig";
        sig["alg"] = "ES256";
        settings.keys_text = Json{{"keys", {enc, ps, sig}}}.dump();
        const auto mixed = loaded(settings);
        CHECK(mixed.key_count() == 1);
        accepted(mixed, es256(claims(), "sig"));
        CHECK(refused(mixed, rs256(claims())).reason == Reason::no_key);
    }
}

TEST_CASE("exp and nbf are checked with the clock skew", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());  // skew 60 s
    auto payload = claims();

    payload["exp"] = kNowSeconds - 120;
    const auto expired = refused(verifier, rs256(payload));
    CHECK(expired.reason == Reason::expired);
    CHECK(contains(expired.message, "expired 120 s ago"));

    payload["exp"] = kNowSeconds - 30;  // within the skew
    accepted(verifier, rs256(payload));
    payload["exp"] = kNowSeconds - 60;  // the skew's edge is expired
    CHECK(refused(verifier, rs256(payload)).reason == Reason::expired);

    payload = claims();
    payload["nbf"] = kNowSeconds + 120;
    const auto early = refused(verifier, es256(payload));
    CHECK(early.reason == Reason::not_yet_valid);
    CHECK(contains(early.message, "not valid yet"));
    payload["nbf"] = kNowSeconds + 30;  // within the skew
    accepted(verifier, es256(payload));
    payload["nbf"] = kNowSeconds - 1.5;  // NumericDate may be fractional
    accepted(verifier, es256(payload));

    payload = claims();
    payload.erase("exp");
    const auto no_exp = refused(verifier, rs256(payload));
    CHECK(no_exp.reason == Reason::claims);
    CHECK(contains(no_exp.message, "no 'exp'"));
    for (const Json& bad : {Json("1800000600"), Json(-5), Json(1e300), Json(nullptr)}) {
        payload["exp"] = bad;
        CHECK(refused(verifier, rs256(payload)).reason == Reason::claims);
    }

    auto settings = pem_settings();
    settings.clock_skew = std::chrono::milliseconds{0};
    payload = claims();
    payload["exp"] = kNowSeconds - 1;
    CHECK(refused(loaded(settings), rs256(payload)).reason == Reason::expired);
}

TEST_CASE("iss and aud are checked when configured", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());
    auto payload = claims();

    payload["iss"] = "https://evil.example.com";
    const auto issuer = refused(verifier, rs256(payload));
    CHECK(issuer.reason == Reason::issuer);
    CHECK(contains(issuer.message, "'https://evil.example.com' is not the configured"));
    payload.erase("iss");
    CHECK(refused(verifier, rs256(payload)).reason == Reason::issuer);

    payload = claims();
    payload["aud"] = "another-service";
    const auto audience = refused(verifier, rs256(payload));
    CHECK(audience.reason == Reason::audience);
    CHECK(contains(audience.message, "'another-service' is not the configured 'outboxd'"));
    payload["aud"] = {"account", "another-service"};
    const auto audiences = refused(verifier, rs256(payload));
    CHECK(audiences.reason == Reason::audience);
    CHECK(contains(audiences.message, "do not include the configured 'outboxd'"));
    payload["aud"] = {"account", "outboxd"};
    accepted(verifier, rs256(payload));
    payload["aud"] = 42;
    CHECK(refused(verifier, rs256(payload)).reason == Reason::audience);
    payload.erase("aud");
    CHECK(refused(verifier, rs256(payload)).reason == Reason::audience);

    auto unchecked = pem_settings();
    unchecked.issuer.clear();
    unchecked.audience.clear();
    payload["iss"] = "anyone";
    accepted(loaded(unchecked), rs256(payload));
}

TEST_CASE("the grants claim must be a bounded array of strings", "[unit][auth]") {
    auto settings = pem_settings();
    settings.max_grants = 2;
    const auto verifier = loaded(settings);
    auto payload = claims();

    payload.erase("outboxd");
    const auto none = refused(verifier, rs256(payload));
    CHECK(none.reason == Reason::claims);
    CHECK(contains(none.message, "no 'outboxd' claim"));
    payload["outboxd"] = "billing:worker";
    CHECK(contains(refused(verifier, rs256(payload)).message, "not an array of strings"));
    payload["outboxd"] = {"billing:worker", 7};
    CHECK(contains(refused(verifier, rs256(payload)).message, "non-string grant"));
    payload["outboxd"] = {"a:worker", "b:worker", "c:worker"};
    CHECK(
        contains(refused(verifier, rs256(payload)).message, "3 grants, more than the limit of 2"));
    payload["outboxd"] = Json::array();
    CHECK(accepted(verifier, rs256(payload)).grants.empty());

    payload = claims();
    payload.erase("sub");
    CHECK(accepted(verifier, rs256(payload)).subject.empty());
    payload["sub"] = Json::object();
    CHECK(refused(verifier, rs256(payload)).reason == Reason::claims);
}

TEST_CASE("signatures of other keys and tampered tokens are refused", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());

    const auto other_ec =
        refused(verifier, signed_token(test_keys().other_ec.get(), header("ES256"), claims()));
    CHECK(other_ec.reason == Reason::signature);
    CHECK(contains(other_ec.message, "signature does not verify with PEM key 2"));
    const auto other_rsa =
        refused(verifier, signed_token(test_keys().small_rsa.get(), header("RS256"), claims()));
    CHECK(other_rsa.reason == Reason::signature);
    // A failed verification leaves nothing in OpenSSL's error queue for a TLS stream on the
    // same thread to mistake for its own failure.
    CHECK(ERR_peek_error() == 0);

    for (const auto& [alg, token] :
         {std::pair{"RS256", rs256(claims())}, std::pair{"ES256", es256(claims())}}) {
        auto raised = claims();
        raised["outboxd"] = {"*:admin", "*:worker"};
        const auto payload = refused(verifier, with_part(token, 1, base64url(raised.dump())));
        CHECK(payload.reason == Reason::signature);
        auto extra = header(alg);
        extra["typ"] = "at+jwt";
        const auto head = refused(verifier, with_part(token, 0, base64url(extra.dump())));
        CHECK(head.reason == Reason::signature);
        // One bit of the signature.
        auto signature = token;
        signature[token.size() - 3] = signature[token.size() - 3] == 'A' ? 'B' : 'A';
        CHECK(refused(verifier, signature).reason == Reason::signature);
    }
    // An RS256 signature relabelled ES256 (and the other way round).
    const auto relabelled = with_part(rs256(claims()), 0, base64url(header("ES256").dump()));
    CHECK(refused(verifier, relabelled).reason == Reason::signature);
    const auto relabelled_es = with_part(es256(claims()), 0, base64url(header("RS256").dump()));
    CHECK(refused(verifier, relabelled_es).reason == Reason::signature);
}

TEST_CASE("alg none, HMAC and algs other than RS256 and ES256 are refused", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());
    const auto unsigned_part = [](const Json& head) {
        return base64url(head.dump()) + "." + base64url(claims().dump()) + ".";
    };

    const auto none = refused(verifier, unsigned_part(header("none")));
    CHECK(none.reason == Reason::algorithm);
    CHECK(contains(none.message, "alg 'none'"));
    // With a signature of a real key appended, still none.
    const auto signature = rs256(claims()).substr(rs256(claims()).rfind('.') + 1);
    CHECK(refused(verifier, unsigned_part(header("none")) + signature).reason == Reason::algorithm);
    // An unsigned RS256 token.
    CHECK(refused(verifier, unsigned_part(header("RS256"))).reason == Reason::signature);

    // Key confusion: HS256 keyed with the configured public key's PEM text.
    for (const auto& secret : {public_pem(test_keys().rsa.get()), public_pem(test_keys().ec.get()),
                               pem_settings().keys_text}) {
        const auto confused = refused(verifier, hs256_token(secret, header("HS256"), claims()));
        CHECK(confused.reason == Reason::algorithm);
        CHECK(contains(confused.message, "alg 'HS256'"));
    }
    // Duplicate alg members: whichever one a JSON parser keeps, HMAC never gets through.
    const auto pem = public_pem(test_keys().rsa.get());
    for (const char* head :
         {R"({"alg":"RS256","alg":"HS256"})", R"({"alg":"HS256","alg":"RS256"})"}) {
        const auto input = base64url(head) + "." + base64url(claims().dump());
        const auto hmac = hs256_token(pem, header("HS256"), claims());
        const auto token = input + hmac.substr(hmac.rfind('.'));
        const auto refusal = refused(verifier, token);
        CHECK((refusal.reason == Reason::algorithm || refusal.reason == Reason::signature));
    }
    // The same against JWKS keys (a JWK's JSON as the secret).
    auto settings = pem_settings();
    const auto jwk = public_jwk(test_keys().rsa.get(), "r1");
    settings.keys_text = Json{{"keys", {jwk}}}.dump();
    CHECK(refused(loaded(settings), hs256_token(jwk.dump(), header("HS256", "r1"), claims()))
              .reason == Reason::algorithm);

    for (const char* alg : {"HS512", "RS512", "PS256", "ES384", "EdDSA", "None", ""}) {
        const auto relabelled = with_part(rs256(claims()), 0, base64url(header(alg).dump()));
        CHECK(refused(verifier, relabelled).reason == Reason::algorithm);
    }
    // An alg the configured keys cannot serve.
    auto rsa_only = pem_settings();
    rsa_only.keys_text = public_pem(test_keys().rsa.get());
    const auto no_ec = refused(loaded(rsa_only), es256(claims()));
    CHECK(no_ec.reason == Reason::no_key);
    CHECK(contains(no_ec.message, "no ES256 key"));
}

TEST_CASE("garbage, oversized and malformed tokens are refused before any key", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());
    const auto token = rs256(claims());
    for (const auto& garbage : std::vector<std::string>{
             "", "opaque-api-key", "a.b", "a.b.c.d", "a..c", ".b.c", "a.b.c=", "a+b.c.d",
             token + ".", token + "=", "eyJhbGciOiJSUzI1NiJ9 .e30.c2ln"}) {
        const auto refusal = refused(verifier, garbage);
        CHECK(refusal.reason == Reason::malformed);
        CHECK(contains(refusal.message, "three base64url parts"));
    }
    const auto long_token = refused(verifier, std::string(9000, 'a'));
    CHECK(long_token.reason == Reason::malformed);
    CHECK(contains(long_token.message, "9000 bytes is longer than the limit of 8192"));

    CHECK(contains(refused(verifier, with_part(token, 0, base64url("not json"))).message,
                   "header is not a JSON object"));
    CHECK(refused(verifier, with_part(token, 0, base64url("[1]"))).reason == Reason::malformed);
    CHECK(refused(verifier, with_part(token, 0, base64url(R"({"typ":"JWT"})"))).reason ==
          Reason::malformed);
    CHECK(refused(verifier,
                  with_part(token, 0, base64url(std::string(40, '[') + std::string(40, ']'))))
              .reason == Reason::malformed);
    auto crit = header("RS256");
    crit["crit"] = {"b64"};
    crit["b64"] = false;
    const auto critical = refused(verifier, signed_token(test_keys().rsa.get(), crit, claims()));
    CHECK(critical.reason == Reason::malformed);
    CHECK(contains(critical.message, "'crit'"));
    // A payload that is not a JSON object, properly signed.
    const auto array_payload = signed_token(test_keys().rsa.get(), header("RS256"), Json{1, 2});
    CHECK(contains(refused(verifier, array_payload).message, "payload is not a JSON object"));
}

TEST_CASE("a bearer is recognised as a JWT by its shape", "[unit][auth]") {
    CHECK(JwtVerifier::looks_like_jwt(rs256(claims())));
    CHECK(JwtVerifier::looks_like_jwt("eyJhbGciOiJSUzI1NiJ9.e30.c2ln"));
    for (const char* bearer : {"", "obx_live_0123456789abcdef", "a.b", "a.b.", "a..c", ".b.c",
                               "a.b.c.d", "a.b.c=", "a b.c.d"}) {
        CHECK_FALSE(JwtVerifier::looks_like_jwt(bearer));
    }
}

TEST_CASE("keys text that yields no usable key is refused, naming what is wrong", "[unit][auth]") {
    const auto& keys = test_keys();
    const auto rsa_pem = public_pem(keys.rsa.get());

    CHECK(contains(load_problem(""), "empty"));
    CHECK(contains(load_problem(" \n"), "empty"));
    CHECK(contains(load_problem("just some text"), "neither a PEM 'PUBLIC KEY' nor a JWKS"));
    auto corrupt = rsa_pem;
    corrupt.replace(corrupt.find('\n') + 10, 8, "!!!!!!!!");
    CHECK(contains(load_problem(corrupt), "PEM key 1 does not parse"));
    auto truncated = rsa_pem.substr(0, rsa_pem.size() / 2);
    CHECK(contains(load_problem(truncated), "PEM key 1 has no END line"));
    CHECK(contains(
        load_problem(rsa_pem + "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
        "PEM key 2 does not parse"));
    CHECK(contains(load_problem(private_pem(keys.ec.get())), "PEM key 1 holds a private key"));
    CHECK(contains(load_problem(public_pem(keys.small_rsa.get())),
                   "RSA key of 1024 bits; at least 2048"));
    CHECK(contains(load_problem(rsa_pem + public_pem(keys.p384.get())),
                   "PEM key 2 is an EC key on curve 'secp384r1'; only P-256"));
    CHECK(contains(load_problem(public_pem(keys.ed25519.get())), "unsupported key type 'ED25519'"));
    CHECK(contains(load_problem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
                   "is a certificate"));

    CHECK(contains(load_problem("{\"keys\": ["), "not valid JSON"));
    CHECK(contains(load_problem(R"({"kty":"RSA"})"), "no \"keys\" array"));
    CHECK(contains(load_problem(R"({"keys":[]})"), "no RS256 or ES256 signing key"));
    CHECK(contains(load_problem(R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})"),
                   "unsupported kty 'oct'"));
    CHECK(contains(load_problem(R"({"keys":[{"kty":"RSA","n":"AQAB"}]})"),
                   "JWKS key 0 does not import"));
    auto off_curve = public_jwk(keys.ec.get());
    auto y = off_curve["y"].get<std::string>();
    y[5] = y[5] == 'A' ? 'B' : 'A';
    off_curve["y"] = y;
    CHECK(contains(load_problem(Json{{"keys", {off_curve}}}.dump()), "JWKS key 0 does not import"));
    auto with_private = public_jwk(keys.ec.get(), "e1");
    with_private["d"] = "AAAA";
    CHECK(contains(load_problem(Json{{"keys", {with_private}}}.dump()),
                   "JWKS key 0 (kid 'e1') holds private key material"));
    auto p384 = public_jwk(keys.ec.get());
    p384["crv"] = "P-384";
    CHECK(contains(load_problem(Json{{"keys", {p384}}}.dump()), "only P-256"));
    auto mislabelled = public_jwk(keys.ec.get());
    mislabelled["alg"] = "RS256";
    CHECK(contains(load_problem(Json{{"keys", {mislabelled}}}.dump()), "marked alg 'RS256'"));
    auto small = public_jwk(keys.small_rsa.get());
    CHECK(contains(load_problem(Json{{"keys", {small}}}.dump()), "1024 bits"));
    auto enc = public_jwk(keys.rsa.get(), "k9");
    enc["use"] = "enc";
    CHECK(contains(load_problem(Json{{"keys", {enc}}}.dump()),
                   "passed over JWKS key 0 (kid 'k9'): use 'enc'"));

    auto settings = pem_settings();
    settings.clock_skew = std::chrono::milliseconds{-1};
    CHECK(contains(load_problem(settings), "clock skew"));
    CHECK(ERR_peek_error() == 0);
}

TEST_CASE("one verifier serves several threads at once", "[unit][auth]") {
    const auto verifier = loaded(pem_settings());
    const auto good_rs = rs256(claims());
    const auto good_es = es256(claims());
    const auto bad = signed_token(test_keys().other_ec.get(), header("ES256"), claims());
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 25; ++i) {
                if (!std::holds_alternative<JwtClaims>(verifier.verify(good_rs, kNow))) ++wrong;
                if (!std::holds_alternative<JwtClaims>(verifier.verify(good_es, kNow))) ++wrong;
                if (!std::holds_alternative<JwtRefusal>(verifier.verify(bad, kNow))) ++wrong;
            }
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(wrong == 0);
}
