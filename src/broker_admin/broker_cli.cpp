#include "outboxd/broker_admin/broker_cli.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "outboxd/broker_admin/broker_admin.hpp"

namespace outboxd::broker_admin {

int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err) {
    CLI::App app{"outboxd broker: set up and read the brokers broker targets publish to"};
    app.require_subcommand(1);
    std::string url;
    std::string stream;
    std::vector<std::string> subjects;
    int duplicate_window_s = 120;
    auto* nats_stream = app.add_subcommand(
        "nats-stream", "Create (or confirm) a JetStream stream with file storage on subjects");
    nats_stream->add_option("--url", url, "nats://[user:password@]host:port")->required();
    nats_stream->add_option("--stream", stream, "The stream's name")->required();
    nats_stream->add_option("--subjects", subjects, "Subjects it stores, e.g. 'orders.>'")
        ->required();
    nats_stream
        ->add_option("--duplicate-window-s", duplicate_window_s,
                     "How long a Nats-Msg-Id is remembered (seconds)")
        ->check(CLI::Range(1, 86400));
    auto* nats_count = app.add_subcommand("nats-count", "Print how many messages a stream holds");
    nats_count->add_option("--url", url, "nats://[user:password@]host:port")->required();
    nats_count->add_option("--stream", stream, "The stream's name")->required();

    std::string exchange;
    std::string type = "topic";
    std::string queue;
    std::string binding = "#";
    auto* amqp_queue = app.add_subcommand(
        "amqp-queue", "Declare a durable exchange and a durable queue bound to it");
    amqp_queue->add_option("--url", url, "amqp://user:password@host:port/vhost")->required();
    amqp_queue->add_option("--exchange", exchange, "The exchange")->required();
    amqp_queue->add_option("--type", type, "direct, topic, fanout or headers")
        ->check(CLI::IsMember({"direct", "topic", "fanout", "headers"}));
    amqp_queue->add_option("--queue", queue, "The queue")->required();
    amqp_queue->add_option("--binding", binding, "The binding key ('#': everything)");
    auto* amqp_count = app.add_subcommand("amqp-count", "Print how many messages a queue holds");
    amqp_count->add_option("--url", url, "amqp://user:password@host:port/vhost")->required();
    amqp_count->add_option("--queue", queue, "The queue")->required();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error, out, err) == 0 ? 0 : 2;
    }
    try {
        if (nats_stream->parsed()) {
            create_stream(url, stream, subjects, std::chrono::seconds{duplicate_window_s});
            out << "stream " << stream << " ready\n";
        } else if (nats_count->parsed()) {
            out << stream_messages(url, stream) << "\n";
        } else if (amqp_queue->parsed()) {
            declare_exchange(url, exchange, type);
            declare_queue_bound(url, queue, exchange, binding);
            out << "queue " << queue << " bound to " << exchange << " (" << binding << ")\n";
        } else if (amqp_count->parsed()) {
            out << queue_messages(url, queue) << "\n";
        }
    } catch (const std::exception& error) {
        err << "outboxd broker: " << error.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace outboxd::broker_admin
