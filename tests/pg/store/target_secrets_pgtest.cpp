// HTTP push targets' secrets at rest (README, "Secrets at rest"): encrypted in the columns they
// always had, read back as they were given, values in clear from before a key was set still
// read and encrypted on their next write, a signing secret kept by a PUT that leaves it out,
// a value under an unknown key or moved to another target failing that target only, and
// reseal for key rotation.

#include <memory>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "outboxd/store/store_error.hpp"
#include "outboxd/store/target_store.hpp"
#include "test_database.hpp"

namespace outboxd {
namespace {

using store::SecretUpdate;

// base64 of the bytes 0..31 and 100..131.
constexpr const char* kKeyA = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr const char* kKeyB = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";

std::shared_ptr<const util::SecretBox> keys(const std::string& list) {
    return std::make_shared<const util::SecretBox>(util::SecretBox::parse(list));
}

// A node's view of the targets: its own session, with its keys (or none).
struct Node {
    Node(const test::TestDatabase& db, std::shared_ptr<const util::SecretBox> secrets)
        : session(db.url(), store::OutboxSession::Uses::targets),
          targets(session, std::move(secrets)) {}
    store::OutboxSession session;
    store::TargetStore targets;
};

store::TargetSettings hook(const std::string& name = "hook") {
    store::TargetSettings t;
    t.name = name;
    t.activity_types = {"charge"};
    t.url = "https://hooks.example.com/in?token=url-s3cret";
    t.signing_secret = "sign-s3cret";
    t.headers = {{"Authorization", "Bearer hdr-s3cret"}, {"X-Tenant", "tenant-7"}};
    return t;
}

// The columns as stored, as text.
std::string stored(const test::TestDatabase& db, const std::string& name) {
    const auto row = db.exec(
        "SELECT coalesce(signing_secret, '<null>') || ' ' || headers::text "
        "FROM http_targets WHERE name = '" +
        name + "'");
    REQUIRE(row.size() == 1);
    return row[0][0].as<std::string>();
}

std::string stored_secret(const test::TestDatabase& db, const std::string& name) {
    return db
        .exec("SELECT coalesce(signing_secret, '<null>') FROM http_targets WHERE name = '" + name +
              "'")[0][0]
        .as<std::string>();
}

}  // namespace

TEST_CASE("with a key, target secrets are stored encrypted and read back as given",
          "[pg][store][secrets]") {
    const test::TestDatabase db;
    Node node{db, keys(std::string{"k1:"} + kKeyA)};
    node.targets.put(hook());

    const auto raw = stored(db, "hook");
    INFO(raw);
    CHECK(raw.find("sign-s3cret") == std::string::npos);
    CHECK(raw.find("hdr-s3cret") == std::string::npos);
    CHECK(raw.find("tenant-7") == std::string::npos);
    CHECK(raw.starts_with("enc:v1:k1:"));
    CHECK(raw.find("\"Authorization\": \"enc:v1:k1:") != std::string::npos);

    const auto record = node.targets.get("hook");
    REQUIRE(record);
    CHECK(record->settings == hook());
    CHECK(record->secrets.encrypted == 3);
    CHECK(record->secrets.clear == 0);
    CHECK(record->secrets.key_ids == std::vector<std::string>{"k1"});
    CHECK_FALSE(record->secrets.problem);
    const auto listed = node.targets.list();
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].settings == hook());
}

TEST_CASE("values in clear from before a key was set still read, and are encrypted when written",
          "[pg][store][secrets]") {
    const test::TestDatabase db;
    Node before{db, nullptr};
    before.targets.put(hook());
    CHECK(stored(db, "hook").find("sign-s3cret") != std::string::npos);  // in clear, as before

    Node after{db, keys(std::string{"k1:"} + kKeyA)};
    const auto record = after.targets.get("hook");
    REQUIRE(record);
    CHECK(record->settings == hook());
    CHECK(record->secrets.clear == 3);
    CHECK(record->secrets.encrypted == 0);
    CHECK_FALSE(record->secrets.problem);

    // The next write encrypts everything, the kept signing secret included.
    auto changed = hook();
    changed.signing_secret.reset();
    changed.max_in_flight = 8;
    after.targets.put(changed, SecretUpdate::keep);
    const auto raw = stored(db, "hook");
    CHECK(raw.find("s3cret") == std::string::npos);
    CHECK(raw.find("tenant-7") == std::string::npos);
    const auto again = after.targets.get("hook");
    REQUIRE(again);
    CHECK(again->settings.signing_secret == "sign-s3cret");
    CHECK(again->settings.max_in_flight == 8);
    CHECK(again->secrets.encrypted == 3);
    CHECK(again->secrets.clear == 0);
}

TEST_CASE(
    "a write that keeps the signing secret keeps it; one that replaces it without one "
    "clears it",
    "[pg][store][secrets]") {
    const test::TestDatabase db;
    Node node{db, keys(std::string{"k1:"} + kKeyA)};
    node.targets.put(hook());
    const auto first = stored_secret(db, "hook");

    auto without = hook();
    without.signing_secret.reset();
    node.targets.put(without, SecretUpdate::keep);
    CHECK(node.targets.get("hook")->settings.signing_secret == "sign-s3cret");
    CHECK(stored_secret(db, "hook") != first);  // encrypted anew, with a fresh nonce

    node.targets.put(without, SecretUpdate::replace);
    CHECK_FALSE(node.targets.get("hook")->settings.signing_secret);
    CHECK(stored_secret(db, "hook") == "<null>");

    // Keeping on a target that does not exist yet keeps nothing.
    auto fresh = hook("fresh");
    fresh.signing_secret.reset();
    node.targets.put(fresh, SecretUpdate::keep);
    CHECK_FALSE(node.targets.get("fresh")->settings.signing_secret);

    // Without keys, a kept secret stays as stored.
    node.targets.put(hook());
    const auto sealed = stored_secret(db, "hook");
    Node keyless{db, nullptr};
    keyless.targets.put(without, SecretUpdate::keep);
    CHECK(stored_secret(db, "hook") == sealed);
}

TEST_CASE("a value under an unknown key, or moved from another target, fails that target only",
          "[pg][store][secrets]") {
    const test::TestDatabase db;
    Node writer{db, keys(std::string{"k1:"} + kKeyA)};
    writer.targets.put(hook("a"));
    writer.targets.put(hook("b"));

    // A node with another key: both targets read, each saying why it cannot be used.
    Node stranger{db, keys(std::string{"k2:"} + kKeyB)};
    const auto listed = stranger.targets.list();
    REQUIRE(listed.size() == 2);
    for (const auto& record : listed) {
        REQUIRE(record.secrets.problem);
        CHECK(record.secrets.problem->find("key id 'k1'") != std::string::npos);
        CHECK(record.settings.signing_secret != "sign-s3cret");
    }
    Node keyless{db, nullptr};
    const auto none = keyless.targets.get("a");
    REQUIRE(none);
    REQUIRE(none->secrets.problem);
    CHECK(none->secrets.problem->find("no OUTBOXD_SECRETS_KEY") != std::string::npos);

    // A ciphertext copied to another target does not decrypt there (its name is authenticated).
    db.exec(
        "UPDATE http_targets SET signing_secret = "
        "(SELECT signing_secret FROM http_targets WHERE name = 'a') WHERE name = 'b'");
    const auto moved = writer.targets.get("b");
    REQUIRE(moved);
    REQUIRE(moved->secrets.problem);
    CHECK(moved->secrets.problem->starts_with("signing_secret does not decrypt"));
    CHECK_FALSE(writer.targets.get("a")->secrets.problem);
    // Nor from one header to another.
    db.exec(
        "UPDATE http_targets SET headers = jsonb_build_object('X-Tenant', "
        "headers->>'Authorization', 'Authorization', headers->>'X-Tenant') WHERE name = 'a'");
    const auto swapped = writer.targets.get("a");
    REQUIRE(swapped->secrets.problem);
    CHECK(swapped->secrets.problem->find("header") != std::string::npos);
}

TEST_CASE("reseal encrypts values in clear and under older keys with the first key",
          "[pg][store][secrets]") {
    const test::TestDatabase db;
    Node keyless{db, nullptr};
    keyless.targets.put(hook("clear"));
    Node old_node{db, keys(std::string{"old:"} + kKeyA)};
    old_node.targets.put(hook("old"));
    Node lost{db, keys(std::string{"lost:"} + kKeyB)};
    lost.targets.put(hook("lost"));
    const auto lost_before = stored(db, "lost");

    Node rotated{db, keys(std::string{"new:"} + kKeyB + ",old:" + kKeyA)};
    const auto report = rotated.targets.reseal();
    CHECK(report.targets == 2);
    CHECK(report.values == 6);
    REQUIRE(report.unreadable.size() == 1);
    CHECK(report.unreadable[0].first == "lost");
    CHECK(stored(db, "lost") == lost_before);  // left as it was
    for (const std::string name : {"clear", "old"}) {
        INFO(name);
        const auto raw = stored(db, name);
        CHECK(raw.starts_with("enc:v1:new:"));
        CHECK(raw.find("enc:v1:old:") == std::string::npos);
        CHECK(raw.find("s3cret") == std::string::npos);
        const auto record = rotated.targets.get(name);
        CHECK(record->settings == hook(name));
        CHECK(record->secrets.key_ids == std::vector<std::string>{"new"});
    }
    // The old key can go now; a second reseal has nothing to do.
    Node retired{db, keys(std::string{"new:"} + kKeyB)};
    CHECK(retired.targets.get("old")->settings == hook("old"));
    CHECK(retired.targets.reseal().targets == 0);

    CHECK_THROWS_AS(keyless.targets.reseal(), store::StoreError);
}

}  // namespace outboxd
