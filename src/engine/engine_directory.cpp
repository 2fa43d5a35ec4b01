#include "outboxd/engine/engine_directory.hpp"

#include <charconv>
#include <map>

namespace outboxd::engine {
namespace {

constexpr char kEngineMark = '@';

}  // namespace

std::string EngineDirectory::next_task_id_suffix() const {
    if (engines_.empty()) return {};
    return std::string{kEngineMark} + std::to_string(engines_.size());
}

OutboxEngine& EngineDirectory::add(std::unique_ptr<OutboxEngine> engine) {
    engines_.push_back(std::move(engine));
    return *engines_.back();
}

OutboxEngine* EngineDirectory::find(std::string_view name) const {
    for (const auto& engine : engines_) {
        if (engine->name() == name) return engine.get();
    }
    return nullptr;
}

OutboxEngine* EngineDirectory::engine_of(const std::string& task_id) const {
    if (engines_.empty()) return nullptr;
    const auto mark = task_id.rfind(kEngineMark);
    if (mark == std::string::npos) return engines_.front().get();
    // Sent back by a sink: anything but an index this node gave is no task of ours.
    std::size_t index = 0;
    const auto* first = task_id.data() + mark + 1;
    const auto* last = task_id.data() + task_id.size();
    const auto [end, error] = std::from_chars(first, last, index);
    if (error != std::errc{} || end != last || first == last || index == 0 ||
        index >= engines_.size()) {
        return nullptr;
    }
    return engines_[index].get();
}

void EngineDirectory::start() {
    // The sinks' windows are shared by the databases; a task one ends may let another claim.
    std::vector<std::string> names;
    for (const auto& engine : engines_) names.push_back(engine->name());
    registry_.set_databases(std::move(names));
    registry_.on_freed([this](std::size_t freed) {
        for (std::size_t db = 0; db < engines_.size(); ++db) {
            if (db != freed && registry_.wants(db)) engines_[db]->dispatcher().request_sweep();
        }
    });
    for (auto& engine : engines_) engine->start();
}

void EngineDirectory::drain(std::function<void()> done) {
    auto left = std::make_shared<std::size_t>(engines_.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    if (engines_.empty()) return (*shared_done)();
    for (auto& engine : engines_) {
        engine->drain([left, shared_done] {
            if (--*left == 0) (*shared_done)();
        });
    }
}

void EngineDirectory::abandon_outstanding(const std::string& reason) {
    for (auto& engine : engines_) engine->abandon_outstanding(reason);
}

void EngineDirectory::stop() {
    for (auto& engine : engines_) engine->stop();
}

bool EngineDirectory::ready() const {
    for (const auto& engine : engines_) {
        if (engine->ready()) return true;
    }
    return false;
}

std::vector<FleetNode> EngineDirectory::fleet() const {
    std::map<std::string, FleetNode> nodes;
    for (const auto& engine : engines_) {
        for (const auto& record : engine->member().nodes()) {
            auto& node = nodes[record.node_id];
            node.node_id = record.node_id;
            if (node.url.empty()) node.url = record.advertise_url;
            node.draining = node.draining || record.draining;
            node.databases.emplace_back(engine->name(), record.shards);
        }
    }
    std::vector<FleetNode> out;
    out.reserve(nodes.size());
    for (auto& [id, node] : nodes) out.push_back(std::move(node));
    return out;
}

std::size_t EngineDirectory::outstanding() const {
    std::size_t total = 0;
    for (const auto& engine : engines_) total += engine->dispatcher().outstanding();
    return total;
}

void EngineDirectory::attach(const std::string& session_id, sinks::SinkProfile profile,
                             std::shared_ptr<sinks::Sink> sink) {
    registry_.add(session_id, std::move(profile), std::move(sink));
    for (auto& engine : engines_) engine->dispatcher().sink_attached();
}

sinks::Answer EngineDirectory::complete(const std::string& session_id, const std::string& task_id,
                                        std::string result_json) {
    auto* engine = engine_of(task_id);
    if (!engine) return sinks::Answer::unknown_task;
    return engine->dispatcher().on_complete(session_id, task_id, std::move(result_json));
}

sinks::Answer EngineDirectory::fail(const std::string& session_id, const std::string& task_id,
                                    std::string error, bool retryable,
                                    std::chrono::milliseconds min_delay) {
    auto* engine = engine_of(task_id);
    if (!engine) return sinks::Answer::unknown_task;
    return engine->dispatcher().on_fail(session_id, task_id, std::move(error), retryable,
                                        min_delay);
}

sinks::Answer EngineDirectory::heartbeat(const std::string& session_id, const std::string& task_id,
                                         std::optional<std::string> progress_json) {
    auto* engine = engine_of(task_id);
    if (!engine) return sinks::Answer::unknown_task;
    return engine->dispatcher().on_heartbeat(session_id, task_id, std::move(progress_json));
}

void EngineDirectory::set_credit(const std::string& session_id, std::int32_t credit) {
    registry_.set_credit(session_id, credit);
    for (auto& engine : engines_) engine->dispatcher().request_sweep();
}

void EngineDirectory::detach(const std::string& session_id) {
    for (auto& engine : engines_) engine->dispatcher().on_sink_lost(session_id);
    registry_.remove(session_id);
}

}  // namespace outboxd::engine
