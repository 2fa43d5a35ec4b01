// The shared vectors (tests/vectors/credit_split.json, cluster_plan.json), run against the
// SDK's own credit ledger, cluster plan and frame parser; the Python and TypeScript clients
// run the same files.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "outboxd/worker/protocol.hpp"
#include "sdk/cluster_plan.hpp"
#include "sdk/credit_ledger.hpp"

namespace {

using namespace outboxd::sdk::detail;
namespace protocol = outboxd::worker::protocol;
using nlohmann::json;
using Clock = CreditLedger::Clock;

// tests/vectors/<name> of the source tree: under OUTBOXD_SOURCE_DIR when set, else above the
// test binary or the working directory (a build directory inside the source tree, as
// scripts/test makes it).
std::filesystem::path vector_file(const std::string& name) {
    auto relative = std::filesystem::path{"tests"} / "vectors" / name;
    std::vector<std::filesystem::path> starts;
    if (const char* source = std::getenv("OUTBOXD_SOURCE_DIR")) starts.emplace_back(source);
    std::error_code ec;
    starts.push_back(std::filesystem::read_symlink("/proc/self/exe", ec).parent_path());
    starts.push_back(std::filesystem::current_path(ec));
    for (auto dir : starts) {
        for (; !dir.empty(); dir = dir.parent_path()) {
            if (std::filesystem::exists(dir / relative, ec)) return dir / relative;
            if (dir == dir.parent_path()) break;
        }
    }
    return relative;
}

json load(const std::string& name) {
    const auto path = vector_file(name);
    INFO("vectors: " << path);
    std::ifstream in{path};
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
}

// The nodes a welcome or cluster frame lists, read as the client reads them.
std::vector<protocol::NodeInfo> listed_nodes(const json& frame) {
    auto parsed = protocol::parse_node_message(frame.dump());
    REQUIRE(std::holds_alternative<protocol::NodeMessage>(parsed));
    const auto& message = std::get<protocol::NodeMessage>(parsed);
    if (const auto* welcome = std::get_if<protocol::Welcome>(&message)) return welcome->cluster;
    const auto* cluster = std::get_if<protocol::Cluster>(&message);
    REQUIRE(cluster);
    return cluster->nodes;
}

// A node the worker knows, as the vectors' worker keeps it.
struct Link {
    std::string url;
    bool seed = false;
    std::optional<std::string> node_id;
    bool connected = false;
};

// Drives one scenario through a CreditLedger and checks every step.
class ScenarioRun {
public:
    ScenarioRun(const json& scenario, std::chrono::milliseconds settle)
        : window_(scenario["window"].get<std::int32_t>()),
          ledger_({window_, std::chrono::milliseconds{scenario["rebalance_interval_ms"].get<int>()},
                   settle}),
          urls_(scenario.value("urls", json::object())) {
        for (const auto& name : scenario.value("seeds", json::array())) {
            links_.emplace_back(name.get<std::string>(), Link{url_of(name), true, {}, false});
        }
    }

    void step(const json& step) {
        if (step.contains("at_ms"))
            now_ = Clock::time_point{} + std::chrono::milliseconds{step["at_ms"].get<int>()};
        CreditLedger::Frames sends;
        const auto add = [&sends](const CreditLedger::Frames& frames) {
            sends.insert(sends.end(), frames.begin(), frames.end());
        };
        if (step.contains("open")) {
            const auto name = step["open"].get<std::string>();
            Link* link = find(name);
            if (!link)
                link = &links_.emplace_back(name, Link{url_of(name), false, {}, false}).second;
            link->connected = true;
            link->node_id = name;
            credit_[name] = 0;
            in_flight_[name] = 0;
            add(ledger_.open(id_of(name), now_));
        } else if (step.contains("close")) {
            const auto name = step["close"].get<std::string>();
            find(name)->connected = false;
            credit_.erase(name);
            in_flight_.erase(name);
            add(ledger_.close(id_of(name), now_));
        } else if (step.contains("drain")) {
            const auto name = step["drain"].get<std::string>();
            credit_[name] = 0;
            add(ledger_.drain(id_of(name), now_));
        } else if (step.contains("receive")) {
            for (const auto& [name, count] : step["receive"].items()) {
                for (int i = 0; i < count.get<int>(); ++i) {
                    ++in_flight_[name];
                    ledger_.received(id_of(name), now_);
                }
            }
        } else if (step.contains("answer")) {
            for (const auto& [name, count] : step["answer"].items()) {
                for (int i = 0; i < count.get<int>(); ++i) {
                    --in_flight_[name];
                    add(ledger_.answered(id_of(name), now_));
                }
            }
        } else if (step.contains("tick")) {
            add(ledger_.tick(now_));
        } else if (step.contains("settle")) {
            add(ledger_.settle(now_));
        } else if (step.contains("cluster")) {
            add(cluster(step));
        } else {
            FAIL("a step that does nothing: " << step.dump());
        }
        check(step, sends);
    }

private:
    std::string url_of(const json& name) const {
        return urls_.value(name.get<std::string>(), name.get<std::string>());
    }

    // The ledger's name of a node's connection: its place among the names seen, from 1.
    CreditLedger::Id id_of(const std::string& name) {
        const auto it = std::find(names_.begin(), names_.end(), name);
        if (it != names_.end()) return static_cast<CreditLedger::Id>(it - names_.begin()) + 1;
        names_.push_back(name);
        return names_.size();
    }

    Link* find(const std::string& name) {
        for (auto& [known, link] : links_) {
            if (known == name) return &link;
        }
        return nullptr;
    }

    CreditLedger::Frames cluster(const json& step) {
        std::vector<KnownNode> known;
        for (const auto& [name, link] : links_) {
            known.push_back({link.url, link.node_id, link.seed, link.connected});
        }
        const auto plan = plan_cluster(known, listed_nodes(step["cluster"]));
        const auto name_of_url = [this](const std::string& url) {
            for (const auto& [name, link] : links_) {
                if (link.url == url) return name;
            }
            return std::string{"?"};
        };
        std::vector<std::string> connect;
        for (const auto& info : plan.connect) connect.push_back(info.node_id);
        std::vector<std::string> drop;
        for (const auto& url : plan.drop) drop.push_back(name_of_url(url));
        CHECK(connect == step["connect"].get<std::vector<std::string>>());
        CHECK(drop == step["drop"].get<std::vector<std::string>>());
        CreditLedger::Frames sends;
        for (const auto& name : drop) {
            std::erase_if(links_, [&name](const auto& entry) { return entry.first == name; });
            if (credit_.erase(name) > 0) {
                in_flight_.erase(name);
                const auto frames = ledger_.close(id_of(name), now_);
                sends.insert(sends.end(), frames.begin(), frames.end());
            }
        }
        for (const auto& info : plan.connect) {
            links_.emplace_back(info.node_id, Link{info.url, false, info.node_id, false});
        }
        return sends;
    }

    void check(const json& step, const CreditLedger::Frames& sends) {
        CreditLedger::Frames expected;
        for (const auto& send : step["sends"]) {
            const bool hello = send.contains("hello");
            expected.push_back({id_of(send["to"].get<std::string>()), hello,
                                send[hello ? "hello" : "credit"].get<std::int32_t>()});
        }
        CHECK(sends == expected);
        for (const auto& frame : sends) credit_[names_.at(frame.connection - 1)] = frame.credit;
        std::int64_t taken = 0;
        std::int64_t holding = 0;
        for (const auto& [name, credit] : credit_) {
            CHECK(ledger_.credit(id_of(name)) == credit);
            const auto held = std::max(credit, in_flight_[name]);
            taken += held;
            if (held > 0) ++holding;
        }
        INFO("credit and tasks over the window " << window_);
        CHECK(taken <= std::max<std::int64_t>(window_, holding));
    }

    const std::int32_t window_;
    CreditLedger ledger_;
    const json urls_;
    std::vector<std::pair<std::string, Link>> links_;  // the nodes the worker knows, by name
    std::map<std::string, std::int32_t> credit_;       // every connection it holds, by node
    std::map<std::string, std::int32_t> in_flight_;
    std::vector<std::string> names_;
    Clock::time_point now_{};
};

}  // namespace

TEST_CASE("the credit ledger sends what the shared vectors say", "[sdk][unit]") {
    const auto vectors = load("credit_split.json");
    const std::chrono::milliseconds settle{vectors["settle_ms"].get<int>()};
    CHECK(settle == kCreditSettle);
    REQUIRE_FALSE(vectors["scenarios"].empty());
    for (const auto& scenario : vectors["scenarios"]) {
        ScenarioRun run{scenario, settle};
        const auto& steps = scenario["steps"];
        for (std::size_t i = 0; i < steps.size(); ++i) {
            INFO(scenario["name"].get<std::string>() << ", step " << i << ": " << steps[i].dump());
            run.step(steps[i]);
        }
    }
}

TEST_CASE("cluster plans are what the shared vectors say", "[sdk][unit]") {
    const auto vectors = load("cluster_plan.json");
    REQUIRE_FALSE(vectors["cases"].empty());
    for (const auto& c : vectors["cases"]) {
        INFO(c["name"].get<std::string>());
        std::vector<KnownNode> known;
        for (const auto& k : c["known"]) {
            std::optional<std::string> node_id;
            if (!k["node_id"].is_null()) node_id = k["node_id"].get<std::string>();
            known.push_back({k["url"].get<std::string>(), node_id, k["seed"].get<bool>(),
                             k["connected"].get<bool>()});
        }
        const auto plan = plan_cluster(known, listed_nodes(c["frame"]));
        json connect = json::array();
        for (const auto& info : plan.connect) {
            connect.push_back({{"node_id", info.node_id}, {"url", info.url}});
        }
        CHECK(connect == c["connect"]);
        CHECK(json(plan.drop) == c["drop"]);
    }
}
