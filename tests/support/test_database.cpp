#include "test_database.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/migrator.hpp"

namespace outboxd::test {
namespace {

std::string unique_name() {
    static std::atomic<int> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return "t_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
           std::to_string(now % 1000000);
}

}  // namespace

std::string TestDatabase::admin_url() {
    if (const char* url = std::getenv("OUTBOXD_TEST_DATABASE_URL"); url && *url) return url;
    if (const char* dir = std::getenv("OUTBOXD_TEST_PG_DIR"); dir && *dir) {
        std::ifstream in{std::string{dir} + "/url"};
        std::string url;
        if (std::getline(in, url) && !url.empty()) return url;
        throw std::runtime_error(std::string{"no test cluster url in "} + dir +
                                 "/url; is the pg fixture running?");
    }
    throw std::runtime_error(
        "set OUTBOXD_TEST_DATABASE_URL or OUTBOXD_TEST_PG_DIR (ctest sets it)");
}

std::string TestDatabase::url_for(const std::string& database) {
    std::string url = admin_url();
    const auto query = url.find('?');
    const std::string params = query == std::string::npos ? "" : url.substr(query);
    url = url.substr(0, query);
    const auto slash = url.rfind('/');
    if (slash == std::string::npos || slash < url.find("://") + 3) {
        return url + "/" + database + params;
    }
    return url.substr(0, slash + 1) + database + params;
}

TestDatabase::TestDatabase(bool migrated) : name_(unique_name()), url_(url_for(name_)) {
    {
        pqxx::connection admin{admin_url()};
        pqxx::nontransaction{admin}.exec("CREATE DATABASE " + name_);
    }
    if (migrated) store::migrate(url_);
}

TestDatabase::~TestDatabase() {
    try {
        pqxx::connection admin{admin_url()};
        pqxx::nontransaction{admin}.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
        // A leftover database dies with the throwaway cluster.
    }
}

pqxx::result TestDatabase::exec(const std::string& sql) const {
    auto conn = connect();
    pqxx::work tx{conn};
    auto result = tx.exec(sql);
    tx.commit();
    return result;
}

void TestDatabase::lease(const std::string& incarnation, const store::ShardRanges& ranges) const {
    // A lease is the node's row's: register the incarnation (node id: its part before '/',
    // or the whole incarnation when another incarnation holds that id) with an hour's lease.
    auto conn = connect();
    pqxx::work tx{conn};
    tx.exec_params(
        "INSERT INTO dispatcher_nodes (node_id, incarnation, advertise_url)"
        " SELECT CASE WHEN EXISTS (SELECT 1 FROM dispatcher_nodes"
        "                          WHERE node_id = split_part($1, '/', 1))"
        "             THEN $1 ELSE split_part($1, '/', 1) END, $1, 'ws://test/v1/workers'"
        " WHERE NOT EXISTS (SELECT 1 FROM dispatcher_nodes WHERE incarnation = $1)",
        incarnation);
    tx.exec_params(
        "UPDATE dispatcher_nodes SET lease_expires_at = now() + interval '1 hour'"
        " WHERE incarnation = $1",
        incarnation);
    tx.commit();
    store::ClusterStore cluster{url_};
    cluster.acquire_shards(incarnation, ranges);
}

}  // namespace outboxd::test
