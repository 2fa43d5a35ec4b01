#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "outboxd/worker/frame_queue.hpp"
#include "outboxd/worker/protocol.hpp"

using namespace outboxd::worker::protocol;
using Catch::Contains;
using nlohmann::json;

namespace {

std::string describe(const ProtocolError& error) { return error.code + ": " + error.message; }

template <typename Frame>
Frame worker_frame(std::string_view text) {
    INFO("frame: " << text);
    const auto parsed = parse_worker_message(text);
    if (const auto* error = std::get_if<ProtocolError>(&parsed)) FAIL(describe(*error));
    const auto& message = std::get<WorkerMessage>(parsed);
    REQUIRE(std::holds_alternative<Frame>(message));
    return std::get<Frame>(message);
}

template <typename Frame>
Frame node_frame(std::string_view text) {
    INFO("frame: " << text);
    const auto parsed = parse_node_message(text);
    if (const auto* error = std::get_if<ProtocolError>(&parsed)) FAIL(describe(*error));
    const auto& message = std::get<NodeMessage>(parsed);
    REQUIRE(std::holds_alternative<Frame>(message));
    return std::get<Frame>(message);
}

ProtocolError worker_error(std::string_view text) {
    INFO("frame: " << text);
    const auto parsed = parse_worker_message(text);
    REQUIRE(std::holds_alternative<ProtocolError>(parsed));
    return std::get<ProtocolError>(parsed);
}

ProtocolError node_error(std::string_view text) {
    INFO("frame: " << text);
    const auto parsed = parse_node_message(text);
    REQUIRE(std::holds_alternative<ProtocolError>(parsed));
    return std::get<ProtocolError>(parsed);
}

// Expects `text` to be refused with `code` and a message naming `field`.
void expect_worker_error(const std::string& text, std::string_view code, const std::string& field) {
    const ProtocolError error = worker_error(text);
    INFO("frame: " << text << "\nerror: " << describe(error));
    CHECK(error.code == code);
    CHECK_THAT(error.message, Contains("'" + field + "'"));
}

void expect_node_error(const std::string& text, std::string_view code, const std::string& field) {
    const ProtocolError error = node_error(text);
    INFO("frame: " << text << "\nerror: " << describe(error));
    CHECK(error.code == code);
    CHECK_THAT(error.message, Contains("'" + field + "'"));
}

std::string hello_with(const std::string& member) {
    return R"({"type":"hello","worker_id":"w1","activity_types":["charge"],)" + member + "}";
}

std::string task_without(const std::string& field) {
    json task = json::parse(R"({"type":"task","task_id":"t1","dispatch_key":"wf:0",
        "workflow_id":"wf","ordinal":0,"run_id":null,"namespace":"default",
        "task_queue":"default","node":null,"activity_type":"charge","input":{},"attempt":1,
        "timeout_ms":30000})");
    task.erase(field);
    return task.dump();
}

// Input with nesting, every escape JSON has, and text outside ASCII (2-, 3- and 4-byte UTF-8).
const std::string kNestedInput =
    R"({"order":{"id":42,"lines":[{"sku":"ä-1","qty":2,"price":12.5},{"sku":"日本","qty":1}]},)"
    R"("note":"quote \" backslash \\ slash \/ \b\f\n\r\t nul \u0000 snowman \u2603 emoji 😀",)"
    R"("flags":[true,false,null],"empty":{},"none":[],"neg":-7,"big":9007199254740993})";

Task sample_task() {
    Task task;
    task.task_id = "0191c7e8-task";
    task.dispatch_key = "wf-1:3";
    task.workflow_id = "wf-1";
    task.ordinal = 3;
    task.run_id = "run-7";
    task.namespace_name = "payments";
    task.task_queue = "eu";
    task.node = "node-b";
    task.activity_type = "charge";
    task.input_json = kNestedInput;
    task.attempt = 2;
    task.delivery = 4;
    task.timeout_ms = 15000;
    return task;
}

}  // namespace

TEST_CASE("hello fills the documented defaults", "[unit][worker]") {
    const auto hello =
        worker_frame<Hello>(R"({"type":"hello","worker_id":"w1","activity_types":["charge"]})");
    CHECK(hello.worker_id == "w1");
    CHECK(hello.namespaces == std::vector<std::string>{"default"});
    CHECK(hello.task_queue == "default");
    CHECK_FALSE(hello.node.has_value());
    CHECK(hello.activity_types == std::vector<std::string>{"charge"});
    CHECK(hello.max_in_flight == 1);

    // Explicit nulls mean the same as absent members.
    const auto nulls = worker_frame<Hello>(
        hello_with(R"("namespaces":null,"task_queue":null,"node":null,"max_in_flight":null)"));
    CHECK(nulls.namespaces == std::vector<std::string>{"default"});
    CHECK(nulls.task_queue == "default");
    CHECK(nulls.max_in_flight == 1);
}

TEST_CASE("hello reads every member of the design's example", "[unit][worker]") {
    const auto hello = worker_frame<Hello>(
        R"({"type":"hello","worker_id":"w1","namespaces":["default","billing"],)"
        R"("task_queue":"eu","node":"n2","activity_types":["charge","refund"],)"
        R"("max_in_flight":16})");
    CHECK(hello.namespaces == std::vector<std::string>{"default", "billing"});
    CHECK(hello.task_queue == "eu");
    CHECK(hello.node == "n2");
    CHECK(hello.activity_types == std::vector<std::string>{"charge", "refund"});
    CHECK(hello.max_in_flight == 16);
    CHECK(worker_frame<Hello>(hello_with(R"("max_in_flight":10000)")).max_in_flight == 10000);
}

TEST_CASE("frames that are not JSON objects are bad_json", "[unit][worker]") {
    for (const std::string text :
         {"", " ", "not json", "{", "}", R"({"type":"hello")", R"({"type":"hello",})",
          R"({"type":"credit","max_in_flight":4)", "[]", R"(["hello"])", "42", R"("hello")", "null",
          "true", R"({"type":"credit","max_in_flight":1e400})",
          "{\"type\":\"hello\",\"worker_id\":\"w\xff\",\"activity_types\":[\"a\"]}"}) {
        INFO("frame: '" << text << "'");
        CHECK(worker_error(text).code == code::kBadJson);
        CHECK(node_error(text).code == code::kBadJson);
    }
}

TEST_CASE("a frame nested absurdly deep is refused, not a stack overflow", "[unit][worker]") {
    const std::size_t depth = 200000;
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    CHECK(worker_error(R"({"type":"complete","task_id":"t","result":)" + deep + "}").code ==
          code::kBadJson);
    CHECK(node_error(task_without("input").insert(1, R"("input":)" + deep + ",")).code ==
          code::kBadJson);

    // Ordinary nesting, and brackets inside strings, are not counted against the frame.
    const std::string modest = std::string(100, '[') + std::string(100, ']');
    const std::string brackets =
        "\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"";
    CHECK(worker_frame<Complete>(R"({"type":"complete","task_id":"t","result":)" + modest + "}")
              .result_json == modest);
    CHECK(worker_frame<Complete>(R"({"type":"complete","task_id":"t","result":)" + brackets + "}")
              .result_json == brackets);
}

TEST_CASE("a missing required member is missing_field, naming it", "[unit][worker]") {
    expect_worker_error(R"({})", code::kMissingField, "type");
    expect_worker_error(R"({"worker_id":"w1","activity_types":["a"]})", code::kMissingField,
                        "type");
    expect_worker_error(R"({"type":"hello","activity_types":["a"]})", code::kMissingField,
                        "worker_id");
    expect_worker_error(R"({"type":"hello","worker_id":null,"activity_types":["a"]})",
                        code::kMissingField, "worker_id");
    expect_worker_error(R"({"type":"hello","worker_id":"w1"})", code::kMissingField,
                        "activity_types");
    expect_worker_error(R"({"type":"complete","result":1})", code::kMissingField, "task_id");
    expect_worker_error(R"({"type":"fail","error":"x"})", code::kMissingField, "task_id");
    expect_worker_error(R"({"type":"credit"})", code::kMissingField, "max_in_flight");
}

TEST_CASE("a member of the wrong type or value is invalid_field, naming it", "[unit][worker]") {
    expect_worker_error(R"({"type":5})", code::kInvalidField, "type");
    expect_worker_error(R"({"type":null})", code::kInvalidField, "type");
    expect_worker_error(R"({"type":"hello","worker_id":5,"activity_types":["a"]})",
                        code::kInvalidField, "worker_id");
    expect_worker_error(R"({"type":"hello","worker_id":"","activity_types":["a"]})",
                        code::kInvalidField, "worker_id");
    expect_worker_error(hello_with(R"("namespaces":"default")"), code::kInvalidField, "namespaces");
    expect_worker_error(hello_with(R"("namespaces":[1])"), code::kInvalidField, "namespaces");
    expect_worker_error(hello_with(R"("namespaces":[""])"), code::kInvalidField, "namespaces");
    expect_worker_error(hello_with(R"("namespaces":[])"), code::kInvalidField, "namespaces");
    expect_worker_error(hello_with(R"("task_queue":"")"), code::kInvalidField, "task_queue");
    expect_worker_error(hello_with(R"("task_queue":3)"), code::kInvalidField, "task_queue");
    expect_worker_error(hello_with(R"("node":5)"), code::kInvalidField, "node");
    expect_worker_error(hello_with(R"("node":"")"), code::kInvalidField, "node");
    expect_worker_error(R"({"type":"hello","worker_id":"w1","activity_types":"charge"})",
                        code::kInvalidField, "activity_types");
    expect_worker_error(R"({"type":"hello","worker_id":"w1","activity_types":[""]})",
                        code::kInvalidField, "activity_types");
    expect_worker_error(R"({"type":"hello","worker_id":"w1","activity_types":[]})",
                        code::kInvalidField, "activity_types");
    for (const std::string bad : {"0", "-1", "10001", "1.5", "\"16\"", "true", "[]",
                                  "18446744073709551615", "-9223372036854775809"}) {
        INFO("max_in_flight " << bad);
        expect_worker_error(hello_with(R"("max_in_flight":)" + bad), code::kInvalidField,
                            "max_in_flight");
    }
    for (const std::string bad : {"-1", "10001", "1.5", "\"4\"", "false"}) {
        INFO("credit " << bad);
        expect_worker_error(R"({"type":"credit","max_in_flight":)" + bad + "}", code::kInvalidField,
                            "max_in_flight");
    }
    expect_worker_error(R"({"type":"complete","task_id":7})", code::kInvalidField, "task_id");
    expect_worker_error(R"({"type":"complete","task_id":""})", code::kInvalidField, "task_id");
    expect_worker_error(R"({"type":"fail","task_id":"t","retryable":"yes"})", code::kInvalidField,
                        "retryable");
}

TEST_CASE("an unknown frame type is unknown_type, naming it", "[unit][worker]") {
    expect_worker_error(R"({"type":"hullo"})", code::kUnknownType, "hullo");
    expect_worker_error(R"({"type":""})", code::kUnknownType, "");
    // Node frames are not worker frames, and the other way round.
    expect_worker_error(R"({"type":"task"})", code::kUnknownType, "task");
    expect_node_error(R"({"type":"hello"})", code::kUnknownType, "hello");
}

TEST_CASE("complete keeps its result as JSON text", "[unit][worker]") {
    const std::string result = R"({"charged":true,"ids":[1,2,{"x":null}],"note":"ü\n"})";
    const auto complete =
        worker_frame<Complete>(R"({"type":"complete","task_id":"t1","result":)" + result + "}");
    CHECK(complete.task_id == "t1");
    CHECK(json::parse(complete.result_json) == json::parse(result));

    CHECK(worker_frame<Complete>(R"({"type":"complete","task_id":"t1"})").result_json == "null");
    CHECK(
        worker_frame<Complete>(R"({"type":"complete","task_id":"t1","result":null})").result_json ==
        "null");
    CHECK(
        worker_frame<Complete>(R"({"type":"complete","task_id":"t1","result":"ok"})").result_json ==
        R"("ok")");
    CHECK(worker_frame<Complete>(R"({"type":"complete","task_id":"t1","result":[]})").result_json ==
          "[]");
}

TEST_CASE("fail defaults to retryable; error text is kept", "[unit][worker]") {
    const auto fail =
        worker_frame<Fail>(R"({"type":"fail","task_id":"t1","error":"card declined"})");
    CHECK(fail.task_id == "t1");
    CHECK(fail.error == "card declined");
    CHECK(fail.retryable);

    CHECK_FALSE(
        worker_frame<Fail>(R"({"type":"fail","task_id":"t1","retryable":false})").retryable);
    CHECK(worker_frame<Fail>(R"({"type":"fail","task_id":"t1","retryable":null})").retryable);
    CHECK(worker_frame<Fail>(R"({"type":"fail","task_id":"t1"})").error.empty());
    // A structured error travels as its JSON text rather than being refused.
    CHECK(json::parse(
              worker_frame<Fail>(R"({"type":"fail","task_id":"t1","error":{"c":1}})").error) ==
          json{{"c", 1}});
}

TEST_CASE("credit may close the window to 0 and open it to the bound", "[unit][worker]") {
    CHECK(worker_frame<Credit>(R"({"type":"credit","max_in_flight":0})").max_in_flight == 0);
    CHECK(worker_frame<Credit>(R"({"type":"credit","max_in_flight":32})").max_in_flight == 32);
    CHECK(worker_frame<Credit>(R"({"type":"credit","max_in_flight":10000})").max_in_flight ==
          kMaxCreditWindow);
}

TEST_CASE("worker frames round trip through encode and parse", "[unit][worker]") {
    Hello hello;
    hello.worker_id = "wörker-1";
    hello.namespaces = {"default", "billing"};
    hello.task_queue = "eu";
    hello.node = "n1";
    hello.activity_types = {"charge", "refund"};
    hello.max_in_flight = 16;
    const auto hello_back = worker_frame<Hello>(encode(hello));
    CHECK(hello_back.worker_id == hello.worker_id);
    CHECK(hello_back.namespaces == hello.namespaces);
    CHECK(hello_back.task_queue == hello.task_queue);
    CHECK(hello_back.node == hello.node);
    CHECK(hello_back.activity_types == hello.activity_types);
    CHECK(hello_back.max_in_flight == hello.max_in_flight);

    Hello minimal;
    minimal.worker_id = "w";
    minimal.activity_types = {"a"};
    const auto minimal_back = worker_frame<Hello>(encode(minimal));
    CHECK_FALSE(minimal_back.node.has_value());
    CHECK(minimal_back.namespaces == std::vector<std::string>{"default"});
    CHECK(minimal_back.max_in_flight == 1);

    const Complete complete{"t1", kNestedInput};
    const auto complete_back = worker_frame<Complete>(encode(complete));
    CHECK(complete_back.task_id == "t1");
    CHECK(json::parse(complete_back.result_json) == json::parse(kNestedInput));
    CHECK(worker_frame<Complete>(encode(Complete{"t2", ""})).result_json == "null");

    const Fail fail{"t1", "boom: \"quoted\"\n\ttabbed ✓", false};
    const auto fail_back = worker_frame<Fail>(encode(fail));
    CHECK(fail_back.task_id == fail.task_id);
    CHECK(fail_back.error == fail.error);
    CHECK(fail_back.retryable == fail.retryable);

    CHECK(worker_frame<Credit>(encode(Credit{0})).max_in_flight == 0);
    CHECK(worker_frame<Credit>(encode(Credit{32})).max_in_flight == 32);
}

TEST_CASE("node frames round trip through encode and parse", "[unit][worker]") {
    const std::vector<NodeInfo> nodes{
        {"n1", "ws://10.0.0.1:8080/v1/workers", {{0, 511}}, {{"orders", {{0, 511}}}}},
        {"n2",
         "wss://n2.example/v1/workers",
         {{512, 1023}},
         {{"orders", {{512, 1023}}}, {"billing", {{0, 99}, {200, 1023}}}}}};

    const auto welcome = node_frame<Welcome>(encode(Welcome{"n1", "s-1", nodes}));
    CHECK(welcome.node_id == "n1");
    CHECK(welcome.session_id == "s-1");
    CHECK(welcome.cluster == nodes);
    CHECK(node_frame<Welcome>(encode(Welcome{"n1", "s-1", {}})).cluster.empty());

    const Task task = sample_task();
    const auto back = node_frame<Task>(encode(task));
    CHECK(back.task_id == task.task_id);
    CHECK(back.database == "default");
    auto of_orders = task;
    of_orders.database = "orders";
    CHECK(node_frame<Task>(encode(of_orders)).database == "orders");
    CHECK(json::parse(encode(task))["database"] == "default");  // always present
    // Text with what JSON must escape, at the start, the middle and the end, round trips.
    // And a 1 MiB text with an escape every 1,000 bytes.
    std::string big(1 << 20, 'x');
    for (std::size_t i = 0; i < big.size(); i += 1000) big[i] = '"';
    for (const std::string& key : {std::string{"\"a\\b\x01c\td\x1f"}, std::string{"plain-key"},
                                   std::string{"\\"}, std::string{"\""}, big}) {
        auto odd = task;
        odd.dispatch_key = key;
        CHECK(node_frame<Task>(encode(odd)).dispatch_key == key);
        CHECK(json::parse(encode(odd))["dispatch_key"] == key);
    }
    // A NUL (PostgreSQL text holds none; the SDK refuses a frame with one) is escaped.
    auto nul = task;
    nul.dispatch_key = std::string{"nul\0inside", 10};
    CHECK(json::parse(encode(nul))["dispatch_key"] == nul.dispatch_key);
    CHECK(back.dispatch_key == task.dispatch_key);
    CHECK(back.workflow_id == task.workflow_id);
    CHECK(back.ordinal == task.ordinal);
    CHECK(back.run_id == task.run_id);
    CHECK(back.namespace_name == task.namespace_name);
    CHECK(back.task_queue == task.task_queue);
    CHECK(back.node == task.node);
    CHECK(back.activity_type == task.activity_type);
    CHECK(json::parse(back.input_json) == json::parse(kNestedInput));
    CHECK(json::parse(back.input_json)["note"].get<std::string>().find(
              std::string{"nul \0 snow", 10}) != std::string::npos);
    CHECK(back.attempt == task.attempt);
    CHECK(back.delivery == task.delivery);
    CHECK(back.timeout_ms == task.timeout_ms);
    // A node from before the delivery count leaves it out: 0, unknown.
    CHECK(node_frame<Task>(task_without("delivery")).delivery == 0);

    CHECK(node_frame<Cluster>(encode(Cluster{nodes})).nodes == nodes);
    CHECK(node_frame<Cluster>(encode(Cluster{})).nodes.empty());
    CHECK_NOTHROW(node_frame<Drain>(encode(Drain{})));

    const auto error = node_frame<Error>(encode(Error{"unknown_task", "no task 't9' here"}));
    CHECK(error.code == "unknown_task");
    CHECK(error.message == "no task 't9' here");
}

TEST_CASE(
    "encode(Task) is the design's example, field for field, with the second wave's priority "
    "and the third wave's database and delivery count",
    "[unit][worker]") {
    Task task;
    task.task_id = "t-1";
    task.dispatch_key = "wf-1:0";
    task.workflow_id = "wf-1";
    task.ordinal = 0;
    task.namespace_name = "default";
    task.task_queue = "default";
    task.activity_type = "charge";
    task.input_json = R"({"amount":5})";
    task.attempt = 1;
    task.timeout_ms = 30000;

    const std::string text = encode(task);
    CHECK(
        text ==
        R"({"type":"task","task_id":"t-1","database":"default","dispatch_key":"wf-1:0",)"
        R"("workflow_id":"wf-1","ordinal":0,"run_id":null,"namespace":"default","task_queue":"default","node":null,)"
        R"("activity_type":"charge","input":{"amount":5},"attempt":1,"delivery":1,)"
        R"("timeout_ms":30000,"priority":0})");

    const json parsed = json::parse(text);
    CHECK(parsed.size() == 16);
    CHECK(parsed["attempt"].is_number_integer());
    CHECK(parsed["ordinal"].is_number_integer());
    CHECK(parsed["timeout_ms"].is_number_integer());
    CHECK(parsed["run_id"].is_null());
    CHECK(parsed["node"].is_null());

    task.run_id = "r1";
    task.node = "n1";
    task.input_json.clear();
    const json with_run = json::parse(encode(task));
    CHECK(with_run["run_id"] == "r1");
    CHECK(with_run["node"] == "n1");
    CHECK(with_run["input"].is_null());
    CHECK_FALSE(with_run.contains("traceparent"));  // only a row with one carries it

    task.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const auto traced = encode(task);
    CHECK(json::parse(traced)["traceparent"] == *task.traceparent);
    const auto back = parse_node_message(traced);
    REQUIRE(std::holds_alternative<NodeMessage>(back));
    CHECK(std::get<Task>(std::get<NodeMessage>(back)).traceparent == task.traceparent);
}

TEST_CASE("a welcome states the largest result the node keeps", "[unit][worker]") {
    Welcome welcome;
    welcome.node_id = "n";
    welcome.session_id = "s";
    CHECK_FALSE(json::parse(encode(welcome)).contains("max_result_bytes"));
    welcome.max_result_bytes = 65536;
    const auto text = encode(welcome);
    CHECK(json::parse(text)["max_result_bytes"] == 65536);
    const auto back = parse_node_message(text);
    REQUIRE(std::holds_alternative<NodeMessage>(back));
    CHECK(std::get<Welcome>(std::get<NodeMessage>(back)).max_result_bytes == 65536);
}

TEST_CASE("task frames refuse missing or invalid members", "[unit][worker]") {
    for (const std::string field : {"task_id", "dispatch_key", "workflow_id", "ordinal",
                                    "namespace", "task_queue", "activity_type", "attempt"}) {
        expect_node_error(task_without(field), code::kMissingField, field);
    }
    // Optional members of a task.
    for (const std::string field : {"run_id", "node", "input", "timeout_ms"}) {
        INFO(field);
        CHECK_NOTHROW(node_frame<Task>(task_without(field)));
    }
    json task = json::parse(task_without("attempt"));
    task["attempt"] = 0;  // one-based on the wire
    expect_node_error(task.dump(), code::kInvalidField, "attempt");
    task["attempt"] = 1;
    task["ordinal"] = -1;
    expect_node_error(task.dump(), code::kInvalidField, "ordinal");

    expect_node_error(R"({"type":"welcome","session_id":"s"})", code::kMissingField, "node_id");
    expect_node_error(R"({"type":"welcome","node_id":"n","session_id":"s","cluster":{}})",
                      code::kInvalidField, "cluster");
    CHECK(node_error(R"({"type":"cluster","nodes":[1]})").code == code::kInvalidField);
    expect_node_error(R"({"type":"cluster","nodes":[{"node_id":"n"}]})", code::kMissingField,
                      "url");
}

TEST_CASE("encode never throws on text that is not UTF-8", "[unit][worker]") {
    std::string encoded;
    REQUIRE_NOTHROW(encoded = encode(Fail{"t1", "bad byte \xff here", true}));
    const auto fail = worker_frame<Fail>(encoded);
    CHECK_THAT(fail.error, Contains("bad byte") && Contains("here"));
    CHECK_NOTHROW(encode(Error{"bad_json", "\xc3"}));
}

TEST_CASE("parse never throws, whatever the bytes", "[unit][worker]") {
    std::mt19937 random{20240611};  // fixed seed: a failure must be reproducible
    std::uniform_int_distribution<int> byte{0, 255};
    std::uniform_int_distribution<int> length{0, 96};

    // Parsed results must also re-encode into something that parses.
    const auto exercise = [](const std::string& text) {
        INFO("frame bytes: " << text.size());
        std::variant<WorkerMessage, ProtocolError> worker;
        std::variant<NodeMessage, ProtocolError> node;
        REQUIRE_NOTHROW(worker = parse_worker_message(text));
        REQUIRE_NOTHROW(node = parse_node_message(text));
        REQUIRE_NOTHROW((void)parse_worker_frame(text));
        REQUIRE_NOTHROW((void)parse_node_frame(text));
        if (const auto* error = std::get_if<ProtocolError>(&worker)) {
            CHECK_FALSE(error->code.empty());
        } else {
            const auto again = std::visit([](const auto& m) { return encode(m); },
                                          std::get<WorkerMessage>(worker));
            CHECK(std::holds_alternative<WorkerMessage>(parse_worker_message(again)));
        }
        if (const auto* error = std::get_if<ProtocolError>(&node)) {
            CHECK_FALSE(error->code.empty());
        } else {
            const auto again =
                std::visit([](const auto& m) { return encode(m); }, std::get<NodeMessage>(node));
            CHECK(std::holds_alternative<NodeMessage>(parse_node_message(again)));
        }
    };

    for (int i = 0; i < 2000; ++i) {
        std::string text(static_cast<std::size_t>(length(random)), '\0');
        for (char& c : text) c = static_cast<char>(byte(random));
        exercise(text);
    }

    // Mutations of valid frames reach deeper than random bytes do.
    Hello hello;
    hello.worker_id = "w1";
    hello.activity_types = {"charge"};
    const std::vector<std::string> seeds{
        encode(hello),
        encode(Complete{"t1", kNestedInput}),
        encode(Fail{"t1", "x", false}),
        encode(Credit{7}),
        encode(sample_task()),
        encode(Welcome{"n1", "s1", {{"n2", "ws://h:1/v1/workers", {}, {}}}}),
        encode(Drain{}),
        encode(Error{"draining", "bye"}),
        encode_batch(std::vector<std::string>{encode(Complete{"t1", "[1]"}), encode(Credit{2})})};
    const std::string alphabet = "{}[]\":,\\0123456789.-eE truefalsnul\xff\xc3";
    for (int i = 0; i < 4000; ++i) {
        std::string text = seeds[static_cast<std::size_t>(i) % seeds.size()];
        const int edits = 1 + i % 4;
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const auto at = static_cast<std::size_t>(random() % text.size());
            const char c = alphabet[random() % alphabet.size()];
            switch (random() % 4) {
                case 0:
                    text[at] = c;
                    break;
                case 1:
                    text.erase(at, 1);
                    break;
                case 2:
                    text.insert(at, 1, c);
                    break;
                default:
                    text.resize(at);
                    break;
            }
        }
        exercise(text);
    }
}

TEST_CASE("an error frame with an empty or absent message parses", "[unit][worker]") {
    CHECK(node_frame<Error>(encode(Error{"draining", ""})).message.empty());
    const auto bare = node_frame<Error>(R"({"type":"error"})");
    CHECK(bare.code == "unknown");
    CHECK(bare.message.empty());
    expect_node_error(R"({"type":"error","code":"x","message":5})", code::kInvalidField, "message");
}

// --- batch frames (compatible extension) --------------------------------------------------

TEST_CASE("hello and welcome carry the batch handshake, off unless stated", "[unit][worker]") {
    CHECK_FALSE(worker_frame<Hello>(hello_with(R"("max_in_flight":2)")).batch);
    CHECK(worker_frame<Hello>(hello_with(R"("batch":true)")).batch);
    expect_worker_error(hello_with(R"("batch":"yes")"), code::kInvalidField, "batch");

    Hello hello;
    hello.worker_id = "w";
    hello.activity_types = {"a"};
    CHECK(encode(hello).find("batch") == std::string::npos);  // the design's hello, unchanged
    CHECK(encode(hello).find("max_frame_bytes") == std::string::npos);
    hello.batch = true;
    hello.max_frame_bytes = 4096;
    CHECK(worker_frame<Hello>(encode(hello)).batch);
    CHECK(worker_frame<Hello>(encode(hello)).max_frame_bytes == 4096);
    CHECK(worker_frame<Hello>(hello_with(R"("batch":true)")).max_frame_bytes == 0);
    expect_worker_error(hello_with(R"("max_frame_bytes":0)"), code::kInvalidField,
                        "max_frame_bytes");

    const auto plain = node_frame<Welcome>(encode(Welcome{"n1", "s1", {}}));
    CHECK_FALSE(plain.batch);
    CHECK(plain.max_frame_bytes == 0);
    const auto batching = node_frame<Welcome>(encode(Welcome{"n1", "s1", {}, true, 65536}));
    CHECK(batching.batch);
    CHECK(batching.max_frame_bytes == 65536);
}

TEST_CASE("a batch frame yields its messages in order; a single frame yields itself",
          "[unit][worker]") {
    const std::vector<std::string> answers{encode(Complete{"t1", R"({"ok":1})"}),
                                           encode(Fail{"t2", "boom", false}), encode(Credit{5}),
                                           encode(Complete{"t3", "null"})};
    const auto parsed = parse_worker_frame(encode_batch(answers));
    REQUIRE(std::holds_alternative<std::vector<WorkerMessage>>(parsed));
    const auto& messages = std::get<std::vector<WorkerMessage>>(parsed);
    REQUIRE(messages.size() == 4);
    CHECK(std::get<Complete>(messages[0]).task_id == "t1");
    CHECK(json::parse(std::get<Complete>(messages[0]).result_json) == json{{"ok", 1}});
    CHECK(std::get<Fail>(messages[1]).error == "boom");
    CHECK_FALSE(std::get<Fail>(messages[1]).retryable);
    CHECK(std::get<Credit>(messages[2]).max_in_flight == 5);
    CHECK(std::get<Complete>(messages[3]).task_id == "t3");

    const auto single = parse_worker_frame(encode(Credit{3}));
    REQUIRE(std::holds_alternative<std::vector<WorkerMessage>>(single));
    REQUIRE(std::get<std::vector<WorkerMessage>>(single).size() == 1);

    Task first = sample_task();
    Task second = sample_task();
    second.task_id = "t-second";
    const auto tasks = parse_node_frame(
        encode_batch(std::vector<std::string>{encode(first), encode(Drain{}), encode(second)}));
    REQUIRE(std::holds_alternative<std::vector<NodeMessage>>(tasks));
    const auto& node_messages = std::get<std::vector<NodeMessage>>(tasks);
    REQUIRE(node_messages.size() == 3);
    CHECK(std::get<Task>(node_messages[0]).task_id == first.task_id);
    CHECK(json::parse(std::get<Task>(node_messages[0]).input_json) == json::parse(kNestedInput));
    CHECK(std::holds_alternative<Drain>(node_messages[1]));
    CHECK(std::get<Task>(node_messages[2]).task_id == "t-second");
}

TEST_CASE("a batch with one bad member is refused whole, naming the member", "[unit][worker]") {
    const auto refused = [](const std::string& text) {
        INFO("frame: " << text);
        const auto parsed = parse_worker_frame(text);
        REQUIRE(std::holds_alternative<ProtocolError>(parsed));
        return std::get<ProtocolError>(parsed);
    };
    const auto complete = encode(Complete{"t1", "null"});

    auto error = refused(R"({"type":"batch","frames":[)" + complete + R"(,{"type":"complete"}]})");
    CHECK(error.code == code::kMissingField);
    CHECK_THAT(error.message, Contains("frames[1]") && Contains("'task_id'"));

    Hello hello;
    hello.worker_id = "w";
    hello.activity_types = {"a"};
    error = refused(encode_batch(std::vector<std::string>{complete, encode(hello)}));
    CHECK(error.code == code::kInvalidField);
    CHECK_THAT(error.message, Contains("frames[1]") && Contains("hello"));

    error = refused(encode_batch(std::vector<std::string>{encode_batch(std::vector{complete})}));
    CHECK_THAT(error.message, Contains("frames[0]") && Contains("batch"));

    CHECK(refused(R"({"type":"batch"})").code == code::kMissingField);
    CHECK(refused(R"({"type":"batch","frames":[]})").code == code::kInvalidField);
    CHECK(refused(R"({"type":"batch","frames":{}})").code == code::kInvalidField);
    CHECK_THAT(refused(R"({"type":"batch","frames":[1]})").message, Contains("frames[0]"));
    CHECK(refused(R"({"type":"batch","frames":[{"type":"nope"}]})").code == code::kUnknownType);

    // The single-message parser does not take batches: only peers that negotiated them do.
    CHECK(worker_error(encode_batch(std::vector{complete})).code == code::kUnknownType);
}

TEST_CASE("a frame queue writes one frame alone, or what is queued as batches within a size",
          "[unit][worker]") {
    FrameQueue queue;
    for (int i = 0; i < 5; ++i) queue.push(encode(Credit{i}));
    CHECK(queue.take(false, kMaxBatchBytes) == encode(Credit{0}));
    CHECK(queue.size() == 4);

    const auto batch = queue.take(true, kMaxBatchBytes);
    CHECK(queue.empty());
    const auto parsed = parse_worker_frame(batch);
    REQUIRE(std::holds_alternative<std::vector<WorkerMessage>>(parsed));
    const auto& messages = std::get<std::vector<WorkerMessage>>(parsed);
    REQUIRE(messages.size() == 4);
    for (std::size_t i = 0; i < messages.size(); ++i) {
        CHECK(std::get<Credit>(messages[i]).max_in_flight == static_cast<std::int32_t>(i + 1));
    }

    // A size bound splits the queue into several batches, none above the bound, in order.
    std::vector<std::string> sent;
    for (int i = 0; i < 100; ++i) {
        sent.push_back(encode(Complete{"task-" + std::to_string(i), "null"}));
        queue.push(sent.back());
    }
    const std::size_t bound = 1000;
    std::vector<std::string> received;
    while (!queue.empty()) {
        const auto text = queue.take(true, bound);
        CHECK(text.size() <= bound);
        const auto frame = parse_worker_frame(text);
        REQUIRE(std::holds_alternative<std::vector<WorkerMessage>>(frame));
        for (const auto& message : std::get<std::vector<WorkerMessage>>(frame)) {
            received.push_back(encode(std::get<Complete>(message)));
        }
    }
    CHECK(received == sent);

    // A frame larger than the bound still goes, alone.
    const std::string big = encode(Complete{"big", "\"" + std::string(2000, 'x') + "\""});
    queue.push(encode(Credit{1}));
    queue.push(big);
    queue.push(encode(Credit{2}));
    CHECK(queue.take(true, bound) == encode(Credit{1}));
    CHECK(queue.take(true, bound) == big);
    CHECK(queue.take(true, bound) == encode(Credit{2}));
}

TEST_CASE("a frame pushed alone, such as a welcome, never shares a batch", "[unit][worker]") {
    FrameQueue queue;
    queue.push(encode(Welcome{"n1", "s1", {}, true, 1 << 20}), /*alone=*/true);
    for (int i = 0; i < 3; ++i) queue.push(encode(Credit{i}));
    CHECK(
        std::holds_alternative<NodeMessage>(parse_node_message(queue.take(true, kMaxBatchBytes))));
    const auto rest = parse_worker_frame(queue.take(true, kMaxBatchBytes));
    REQUIRE(std::holds_alternative<std::vector<WorkerMessage>>(rest));
    CHECK(std::get<std::vector<WorkerMessage>>(rest).size() == 3);

    queue.push(encode(Credit{7}));
    queue.push(encode(Drain{}), /*alone=*/true);
    queue.push(encode(Credit{8}));
    CHECK(queue.take(true, kMaxBatchBytes) == encode(Credit{7}));  // stops before it
    CHECK(queue.take(true, kMaxBatchBytes) == encode(Drain{}));
    CHECK(queue.take(true, kMaxBatchBytes) == encode(Credit{8}));
}

TEST_CASE("only a batch may nest two levels deeper than a message", "[unit][worker]") {
    const auto nested = [](std::size_t depth) {
        return std::string(depth, '[') + std::string(depth, ']');
    };
    // A complete frame is one level; its result adds the rest.
    const auto complete = [&](std::size_t depth) {
        return R"({"type":"complete","task_id":"t","result":)" + nested(depth - 1) + "}";
    };
    CHECK_NOTHROW(worker_frame<Complete>(complete(128)));
    CHECK(worker_error(complete(129)).code == code::kBadJson);
    CHECK(std::holds_alternative<ProtocolError>(parse_worker_frame(complete(129))));
    // The same deepest message inside a batch is accepted; one level more is not.
    const auto in_batch = [&](std::size_t depth) {
        return R"({"type":"batch","frames":[)" + complete(depth) + "]}";
    };
    CHECK(std::holds_alternative<std::vector<WorkerMessage>>(parse_worker_frame(in_batch(128))));
    CHECK(std::holds_alternative<ProtocolError>(parse_worker_frame(in_batch(129))));
}

TEST_CASE("a frame queue counts the bytes it holds", "[unit][worker]") {
    FrameQueue queue;
    CHECK(queue.bytes() == 0);
    const auto a = encode(Credit{1});
    const auto b = encode(Complete{"task-1", "\"" + std::string(500, 'x') + "\""});
    queue.push(a);
    queue.push(b);
    queue.push(a);
    CHECK(queue.bytes() == 2 * a.size() + b.size());
    (void)queue.take(false, kMaxBatchBytes);
    CHECK(queue.bytes() == a.size() + b.size());
    (void)queue.take(true, kMaxBatchBytes);
    CHECK(queue.bytes() == 0);
    queue.push(b);
    queue.clear();
    CHECK(queue.bytes() == 0);
}

TEST_CASE("names and ids a database or a log could not take are refused where they enter",
          "[unit][worker]") {
    const auto hello_with = [](const std::string& field, const nlohmann::json& value) {
        nlohmann::json frame{{"type", "hello"}, {"worker_id", "w"}, {"activity_types", {"a"}}};
        frame[field] = value;
        return frame.dump();
    };
    expect_worker_error(hello_with("activity_types", {std::string{"b\0", 2}}), code::kInvalidField,
                        "activity_types");
    expect_worker_error(hello_with("namespaces", {std::string(kMaxIdentifierBytes + 1, 'n')}),
                        code::kInvalidField, "namespaces");
    expect_worker_error(hello_with("worker_id", std::string{"w\0", 2}), code::kInvalidField,
                        "worker_id");
    expect_worker_error(hello_with("task_queue", std::string{"q\0", 2}), code::kInvalidField,
                        "task_queue");
    expect_worker_error(hello_with("node", std::string{"n\0", 2}), code::kInvalidField, "node");
    // A task id names one claim: anything much longer is refused without being echoed.
    const auto long_id = worker_error(
        nlohmann::json{{"type", "complete"}, {"task_id", std::string(100'000, '7')}}.dump());
    CHECK(long_id.code == code::kInvalidField);
    CHECK(long_id.message.size() < 200);
}

TEST_CASE("a fail's error text is kept legibly: NUL bytes replaced, its length bounded",
          "[unit][worker]") {
    const auto fail = worker_frame<Fail>(nlohmann::json{
        {"type", "fail"}, {"task_id", "1.2"}, {"error", std::string{"card\0declined", 13}}}
                                             .dump());
    CHECK(fail.error ==
          "card\xef\xbf\xbd"
          "declined");
    const auto long_fail = worker_frame<Fail>(nlohmann::json{
        {"type", "fail"},
        {"task_id", "1.2"},
        {"error", std::string(100'000, 'e')}}.dump());
    CHECK(long_fail.error.size() <= kMaxMessageBytes);
    const auto structured =
        worker_frame<Fail>(R"({"type":"fail","task_id":"1.2","error":{"code":7}})");
    CHECK(structured.error == R"({"code":7})");
}

TEST_CASE("a task's attempt travels beyond the int32 range of a stored attempt", "[unit][worker]") {
    Task task;
    task.task_id = "1.1";
    task.dispatch_key = "k";
    task.workflow_id = "w";
    task.namespace_name = "default";
    task.task_queue = "default";
    task.activity_type = "a";
    task.attempt = std::int64_t{INT32_MAX} + 1;
    const auto parsed = parse_node_message(encode(task));
    REQUIRE(std::holds_alternative<NodeMessage>(parsed));
    CHECK(std::get<Task>(std::get<NodeMessage>(parsed)).attempt == std::int64_t{INT32_MAX} + 1);
}

TEST_CASE("a worker takes a node's task frame whatever the length of the row's names",
          "[unit][worker]") {
    Task task;
    task.task_id = "1.1";
    task.dispatch_key = std::string(1024, 'w') + ":12345";  // a key the database filled in
    task.workflow_id = std::string(1024, 'w');
    task.namespace_name = "default";
    task.task_queue = "default";
    task.activity_type = std::string(5000, 'a');  // a row inserted by plain SQL
    const auto parsed = parse_node_frame(encode(task));
    REQUIRE(std::holds_alternative<std::vector<NodeMessage>>(parsed));
    CHECK(std::get<Task>(std::get<std::vector<NodeMessage>>(parsed)[0]).dispatch_key ==
          task.dispatch_key);
}

TEST_CASE("a hello may not state a frame limit no task fits in", "[unit][worker]") {
    expect_worker_error(
        R"({"type":"hello","worker_id":"w","activity_types":["a"],"max_frame_bytes":1})",
        code::kInvalidField, "max_frame_bytes");
    const auto hello = worker_frame<Hello>(
        R"({"type":"hello","worker_id":"w","activity_types":["a"],"max_frame_bytes":1024})");
    CHECK(hello.max_frame_bytes == 1024);
}

TEST_CASE("a task goes as a frame the worker reads, or is refused with the reason",
          "[unit][worker]") {
    Task task;
    task.task_id = "1.1";
    task.activity_type = "charge";
    task.input_json = R"({"amount":5})";
    const auto plain = encode_task_for(task, 0);
    CHECK(plain.refused.empty());
    CHECK(plain.frame == encode(task));

    const auto small = encode_task_for(task, plain.frame.size() - 1);
    CHECK(small.frame.empty());
    CHECK_THAT(small.refused,
               Catch::Contains("more than the") && Catch::Contains("the worker reads"));
    CHECK(encode_task_for(task, plain.frame.size()).refused.empty());  // exactly fits

    task.input_json =
        std::string(kMaxInputNesting + 1, '[') + std::string(kMaxInputNesting + 1, ']');
    const auto deep = encode_task_for(task, 0);
    CHECK(deep.frame.empty());
    CHECK_THAT(deep.refused, Catch::Contains("nests deeper than"));
    task.input_json = std::string(kMaxInputNesting, '[') + std::string(kMaxInputNesting, ']');
    CHECK(encode_task_for(task, 0).refused.empty());
}

TEST_CASE(
    "a complete's result with huge numbers or a megabyte string stays JSON the node can "
    "measure",
    "[unit][worker]") {
    for (const std::string& result :
         {std::string{"1e400"}, std::string{"123456789012345678901234567890"},
          std::string{"-1e-400"}, "\"" + std::string(1 << 20, 'x') + "\""}) {
        const auto parsed =
            parse_worker_message(R"({"type":"complete","task_id":"1.1","result":)" + result + "}");
        INFO(result.substr(0, 40));
        if (const auto* error = std::get_if<ProtocolError>(&parsed)) {
            // A number JSON can write but no double holds: the frame is refused, named.
            CHECK(error->code == "bad_json");
            CHECK(result == "1e400");
            continue;
        }
        const auto& complete = std::get<Complete>(std::get<WorkerMessage>(parsed));
        // Whatever it became, it is one JSON value again (its size is what the limit checks).
        CHECK_FALSE(json::parse(complete.result_json, nullptr, false).is_discarded());
    }
}
