// Grants and the authenticator (README, "Security"): what each role reaches, which bearer is
// whom, open and guarded areas, expiry by the database's clock, revocation.

#include <catch2/catch.hpp>

#include "outboxd/auth/authenticator.hpp"

using namespace outboxd;
using auth::Area;
using auth::Grant;
using auth::Role;
using Clock = std::chrono::system_clock;

namespace {

store::CredentialRecord credential(std::string id, const std::string& secret,
                                   std::vector<std::string> namespaces,
                                   std::vector<std::string> roles) {
    store::CredentialRecord c;
    c.id = std::move(id);
    c.name = "test";
    c.secret_sha256 = auth::sha256_hex(secret);
    c.namespaces = std::move(namespaces);
    c.roles = std::move(roles);
    return c;
}

std::shared_ptr<const Grant> granted(const auth::Authenticator::Result& result) {
    const auto* grant = std::get_if<std::shared_ptr<const Grant>>(&result);
    return grant ? *grant : nullptr;
}

std::string refusal(const auth::Authenticator::Result& result) {
    const auto* why = std::get_if<std::string>(&result);
    return why ? *why : "";
}

// A JWT stand-in: "jwt.<grants>.sig" carries the pairs named, "jwt.bad.sig" is refused.
class FakeJwt final : public auth::BearerVerifier {
public:
    [[nodiscard]] bool takes(std::string_view bearer) const override {
        return bearer.starts_with("jwt.");
    }
    [[nodiscard]] std::variant<Grant, std::string> verify(std::string_view bearer,
                                                          Clock::time_point) const override {
        if (bearer == "jwt.bad.sig") return std::string{"bad signature"};
        Grant grant;
        grant.credential_id = "jwt:alice";
        if (auto why = auth::parse_claim_grants({"billing:worker", "*:reader"}, grant.scopes)) {
            return *why;
        }
        return grant;
    }
};

}  // namespace

TEST_CASE("roles imply what they say: admin everything, operator reads, payloads apart",
          "[unit][auth]") {
    Grant grant;
    grant.scopes = auth::scopes_of({"billing"}, {Role::operator_});
    CHECK(grant.may(Role::operator_, "billing"));
    CHECK(grant.may(Role::reader, "billing"));
    CHECK_FALSE(grant.may(Role::read_payloads, "billing"));
    CHECK_FALSE(grant.may(Role::worker, "billing"));
    CHECK_FALSE(grant.may(Role::reader, "orders"));
    CHECK_FALSE(grant.may_everywhere(Role::reader));
    CHECK(grant.namespaces_for(Role::reader) == std::vector<std::string>{"billing"});

    Grant admin;
    admin.scopes = auth::scopes_of({"*"}, {Role::admin});
    for (const auto role : {Role::worker, Role::producer, Role::reader, Role::read_payloads,
                            Role::operator_, Role::admin}) {
        CHECK(admin.may(role, "anything"));
        CHECK(admin.may_everywhere(role));
    }
    CHECK_FALSE(admin.namespaces_for(Role::reader).has_value());
}

TEST_CASE("a JWT's grants are namespace:role pairs; a bad one is named", "[unit][auth]") {
    std::vector<auth::Scope> scopes;
    REQUIRE_FALSE(
        auth::parse_claim_grants({"billing:worker", "billing:reader", "a:b:c:admin"}, scopes));
    Grant grant;
    grant.scopes = scopes;
    CHECK(grant.may(Role::worker, "billing"));
    CHECK(grant.may(Role::reader, "billing"));
    CHECK(grant.may(Role::admin, "a:b:c"));  // a namespace may hold ':'
    std::vector<auth::Scope> bad;
    CHECK(auth::parse_claim_grants({"billing"}, bad)->find("<namespace>:<role>") !=
          std::string::npos);
    CHECK(auth::parse_claim_grants({"billing:root"}, bad)->find("no known role") !=
          std::string::npos);
    CHECK(auth::parse_claim_grants({":worker"}, bad)->find("no valid namespace") !=
          std::string::npos);
}

TEST_CASE("a node with no credential is open; each bootstrap token closes its own area",
          "[unit][auth]") {
    auth::Authenticator open{{}, nullptr};
    // Until the managed credentials were read, one may exist: closed.
    CHECK(refusal(open.authenticate(std::nullopt, Area::api)) ==
          "a valid bearer token is required");
    open.replace_managed({}, Clock::now());
    CHECK_FALSE(open.guarded());
    CHECK(granted(open.authenticate(std::nullopt, Area::api))->may_everywhere(Role::admin));
    CHECK(granted(open.authenticate(std::nullopt, Area::workers))->may_everywhere(Role::worker));

    auth::Authenticator admin_only{{std::string{"adm"}, std::nullopt}, nullptr};
    admin_only.replace_managed({}, Clock::now());
    CHECK(admin_only.guarded());
    // What a worker may do stays open, as it did with the admin token alone.
    const auto anonymous = granted(admin_only.authenticate(std::nullopt, Area::api));
    REQUIRE(anonymous);
    CHECK(anonymous->may_everywhere(Role::worker));
    CHECK_FALSE(anonymous->may_somewhere(Role::reader));
    CHECK(granted(admin_only.authenticate(std::nullopt, Area::workers)));
    CHECK(granted(admin_only.authenticate("adm", Area::api))->may_everywhere(Role::admin));
    CHECK(refusal(admin_only.authenticate("wrong", Area::api)) ==
          "the bearer token is not a known credential");

    auth::Authenticator both{{std::string{"adm"}, std::string{"wrk"}}, nullptr};
    both.replace_managed({}, Clock::now());
    CHECK_FALSE(granted(both.authenticate(std::nullopt, Area::workers)));
    CHECK_FALSE(granted(both.authenticate(std::nullopt, Area::api)));
    const auto worker = granted(both.authenticate("wrk", Area::workers));
    REQUIRE(worker);
    CHECK(worker->credential_id == "bootstrap:worker");
    CHECK_FALSE(worker->may_somewhere(Role::reader));
}

TEST_CASE("one managed credential closes an open node; its secret opens its scope only",
          "[unit][auth]") {
    auto now = Clock::now();
    auth::Authenticator authenticator{{}, nullptr, [&now] { return now; }};
    const auto made = auth::new_secret();
    CHECK(made.secret.starts_with("obx_"));
    CHECK(made.secret.size() == 4 + 43);
    CHECK(made.sha256 == auth::sha256_hex(made.secret));
    authenticator.replace_managed(
        {credential("cred_1", made.secret, {"billing"}, {"worker", "reader"})}, now);
    CHECK(authenticator.guarded());
    CHECK_FALSE(granted(authenticator.authenticate(std::nullopt, Area::api)));
    const auto grant = granted(authenticator.authenticate(made.secret, Area::workers));
    REQUIRE(grant);
    CHECK(grant->credential_id == "cred_1");
    CHECK(grant->may(Role::worker, "billing"));
    CHECK_FALSE(grant->may(Role::worker, "orders"));
    CHECK(authenticator.still_valid(*grant));

    authenticator.remove_managed("cred_1");
    CHECK_FALSE(authenticator.still_valid(*grant));
    CHECK(refusal(authenticator.authenticate(made.secret, Area::api)) ==
          "the bearer token is not a known credential");
}

TEST_CASE("expiry is judged by the database's clock", "[unit][auth]") {
    auto node_now = Clock::now();
    auth::Authenticator authenticator{{}, nullptr, [&node_now] { return node_now; }};
    auto c = credential("cred_2", "obx_secret", {"*"}, {"reader"});
    const auto database_now = node_now + std::chrono::hours{1};  // the node's clock is behind
    c.expires_at = std::chrono::time_point_cast<std::chrono::microseconds>(
        database_now + std::chrono::minutes{30});
    authenticator.replace_managed({c}, database_now);
    REQUIRE(granted(authenticator.authenticate("obx_secret", Area::api)));
    node_now += std::chrono::minutes{31};  // the database's clock is now past the expiry
    CHECK(refusal(authenticator.authenticate("obx_secret", Area::api)) ==
          "the bearer token's credential has expired");
}

TEST_CASE("a JWT is judged by its verifier and closes the node", "[unit][auth]") {
    auth::Authenticator authenticator{{}, std::make_shared<FakeJwt>()};
    authenticator.replace_managed({}, Clock::now());
    CHECK(authenticator.guarded());
    const auto grant = granted(authenticator.authenticate("jwt.x.sig", Area::workers));
    REQUIRE(grant);
    CHECK(grant->credential_id == "jwt:alice");
    CHECK(grant->may(Role::worker, "billing"));
    CHECK(grant->may(Role::reader, "orders"));
    CHECK_FALSE(grant->may(Role::worker, "orders"));
    CHECK(refusal(authenticator.authenticate("jwt.bad.sig", Area::api)) ==
          "JWT refused: bad signature");
}

TEST_CASE("a worker credential with nodes may claim on those nodes only", "[unit][auth]") {
    Grant grant;
    CHECK(grant.may_use_node(std::nullopt));
    grant.nodes = {"eu-1"};
    CHECK(grant.may_use_node("eu-1"));
    CHECK_FALSE(grant.may_use_node("us-1"));
    CHECK_FALSE(grant.may_use_node(std::nullopt));
}
