// Heartbeat and cancel frames, and the task frame's heartbeat timeout (README, "Task policy
// and heartbeats").

#include <catch2/catch.hpp>

#include "outboxd/worker/protocol.hpp"

using namespace outboxd::worker::protocol;
using Catch::Contains;

namespace {

WorkerMessage worker_message(std::string_view text) {
    INFO("frame: " << text);
    auto parsed = parse_worker_message(text);
    if (const auto* error = std::get_if<ProtocolError>(&parsed)) FAIL(error->message);
    return std::get<WorkerMessage>(parsed);
}

ProtocolError refused(std::string_view text) {
    INFO("frame: " << text);
    auto parsed = parse_worker_message(text);
    REQUIRE(std::holds_alternative<ProtocolError>(parsed));
    return std::get<ProtocolError>(parsed);
}

}  // namespace

TEST_CASE("a heartbeat names its task and may carry progress", "[unit][worker][heartbeat]") {
    const auto bare =
        std::get<Heartbeat>(worker_message(R"({"type":"heartbeat","task_id":"7.3"})"));
    CHECK(bare.task_id == "7.3");
    CHECK_FALSE(bare.progress_json);
    const auto null_progress = std::get<Heartbeat>(
        worker_message(R"({"type":"heartbeat","task_id":"7.3","progress":null})"));
    CHECK_FALSE(null_progress.progress_json);
    const auto with = std::get<Heartbeat>(worker_message(
        R"({"type":"heartbeat","task_id":"7.3","progress":{"done": 40, "of":100}})"));
    CHECK(with.progress_json == R"({"done":40,"of":100})");  // compact, as the node keeps it
    // Round trip through encode.
    const auto again = std::get<Heartbeat>(worker_message(encode(with)));
    CHECK(again.progress_json == with.progress_json);
    CHECK(std::get<Heartbeat>(worker_message(encode(bare))).task_id == "7.3");
}

TEST_CASE("a heartbeat without a task, with a bad task id or too much progress is refused",
          "[unit][worker][heartbeat]") {
    CHECK(refused(R"({"type":"heartbeat"})").code == code::kMissingField);
    CHECK(refused(R"({"type":"heartbeat","task_id":""})").code == code::kInvalidField);
    CHECK(refused(R"({"type":"heartbeat","task_id":7})").code == code::kInvalidField);
    CHECK(refused(R"({"type":"heartbeat","task_id":")" + std::string(65, '1') + R"("})").code ==
          code::kInvalidField);
    const auto big = refused(R"({"type":"heartbeat","task_id":"1.1","progress":")" +
                             std::string(kMaxProgressBytes, 'x') + R"("})");
    CHECK(big.code == code::kInvalidField);
    CHECK_THAT(big.message, Contains("'progress'") && Contains("8192"));
    // 10,000 levels, invalid UTF-8, a number past any integer: refused, never a crash.
    const auto deep = refused(R"({"type":"heartbeat","task_id":"1.1","progress":)" +
                              std::string(10000, '[') + std::string(10000, ']') + "}");
    CHECK_FALSE(deep.message.empty());
    CHECK(refused("{\"type\":\"heartbeat\",\"task_id\":\"1.\xff\"}").code == code::kBadJson);
    CHECK(refused(R"({"type":"heartbeat","task_id":"1.1","progress":")" +
                  std::string(1 << 20, 'x') + R"("})")
              .code == code::kInvalidField);
    // A number past a double's range is not JSON the node reads: the frame is refused.
    CHECK(refused(R"({"type":"heartbeat","task_id":"1.1","progress":1e400})").code ==
          code::kBadJson);
    const auto nul = refused(R"({"type":"heartbeat","task_id":"1.1","progress":"a\u0000b"})");
    CHECK_THAT(nul.message, Contains("u0000"));
    // Inside a batch, named by its place.
    const auto batch = parse_worker_frame(
        R"({"type":"batch","frames":[{"type":"heartbeat","task_id":"1.1"},{"type":"heartbeat"}]})");
    REQUIRE(std::holds_alternative<ProtocolError>(batch));
    CHECK_THAT(std::get<ProtocolError>(batch).message, Contains("1"));
}

TEST_CASE("a cancel frame and the task frame's heartbeat timeout round trip",
          "[unit][worker][heartbeat]") {
    const auto cancel =
        parse_node_message(encode(Cancel{"12.9", "the task's workflow was cancelled"}));
    REQUIRE(std::holds_alternative<NodeMessage>(cancel));
    const auto& parsed = std::get<Cancel>(std::get<NodeMessage>(cancel));
    CHECK(parsed.task_id == "12.9");
    CHECK(parsed.reason == "the task's workflow was cancelled");

    Task task;
    task.task_id = "1.2";
    task.dispatch_key = "k";
    task.workflow_id = "wf";
    task.namespace_name = "default";
    task.task_queue = "default";
    task.activity_type = "long";
    task.timeout_ms = 0;
    CHECK(encode(task).find("heartbeat_timeout_ms") == std::string::npos);  // old frames
    task.heartbeat_timeout_ms = 5000;
    const auto frame = parse_node_message(encode(task));
    REQUIRE(std::holds_alternative<NodeMessage>(frame));
    const auto& back = std::get<Task>(std::get<NodeMessage>(frame));
    CHECK(back.heartbeat_timeout_ms == 5000);
    CHECK(back.timeout_ms == 0);
}
