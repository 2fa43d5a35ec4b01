#include "nats_channel.hpp"

#include <condition_variable>
#include <mutex>

#include <boost/asio/post.hpp>
#include <nats/nats.h>
#include <nlohmann/json.hpp>

#include "nats_url.hpp"
#include "outboxd/sinks/broker/broker_rules.hpp"
#include "outboxd/sinks/nats/nats_kind.hpp"
#include "outboxd/sinks/task_headers.hpp"
#include "outboxd/util/untrusted_text.hpp"
#include "outboxd/worker/protocol.hpp"

namespace outboxd::sinks::nats::detail {

using targets::HostPolicy;

// What nats.c's callbacks are given as their closure. It must outlive every callback, and
// nats.c does not say when the last one has run: it is kept for the life of the process (one
// small object per target change).
struct NatsChannel::Bridge {
    boost::asio::any_io_executor loop;
    std::weak_ptr<NatsChannel> channel;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    // What the connector made, until the channel releases it (guarded by mutex): kept here,
    // not only posted to the loop, so that a channel released before the post runs still
    // closes it.
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;

    template <typename F>
    void post(F&& f) {
        boost::asio::post(loop, [channel = channel, f = std::forward<F>(f)]() mutable {
            if (auto held = channel.lock()) f(*held);
        });
    }
};

namespace {

using Clock = std::chrono::steady_clock;

std::string status_text(natsStatus status) {
    std::string text = natsStatus_GetText(status);
    const char* detail = nats_GetLastError(nullptr);
    if (detail != nullptr && *detail != '\0' && text != detail) text += ": " + std::string{detail};
    return util::sanitize_text(text, 300);
}

void on_connected(natsConnection* /*nc*/, void* closure) {
    static_cast<NatsChannel::Bridge*>(closure)->post([](NatsChannel& c) { c.on_state(true, ""); });
}

void on_disconnected(natsConnection* /*nc*/, void* closure) {
    static_cast<NatsChannel::Bridge*>(closure)->post(
        [](NatsChannel& c) { c.on_state(false, "disconnected from the NATS server"); });
}

void on_closed(natsConnection* /*nc*/, void* closure) {
    static_cast<NatsChannel::Bridge*>(closure)->post(
        [](NatsChannel& c) { c.on_state(false, "the NATS connection closed"); });
}

void on_pub_ack(jsCtx* /*js*/, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
    const char* id = nullptr;
    std::string task_id;
    if (natsMsgHeader_Get(msg, "Outboxd-Task-Id", &id) == NATS_OK && id != nullptr) task_id = id;
    std::optional<std::string> failure;
    bool permanent = false;
    std::optional<std::string> result;
    if (error != nullptr) {
        if (error->Err == NATS_NO_RESPONDERS) {
            failure = "no JetStream stream is bound to subject '" +
                      util::sanitize_text(natsMsg_GetSubject(msg), 200) + "' (no responders)";
            permanent = true;
        } else {
            failure = "NATS publish failed: " + std::string{natsStatus_GetText(error->Err)};
            if (error->ErrText != nullptr)
                *failure += ": " + util::sanitize_text(error->ErrText, 300);
            if (error->ErrCode != 0)
                *failure += " (JetStream error " + std::to_string(error->ErrCode) + ")";
        }
    } else if (ack != nullptr) {
        result = nlohmann::json{{"stream", ack->Stream ? ack->Stream : ""},
                                {"sequence", ack->Sequence},
                                {"duplicate", ack->Duplicate}}
                     .dump();
    }
    natsMsg_Destroy(msg);
    if (task_id.empty()) return;
    static_cast<NatsChannel::Bridge*>(closure)->post(
        [task_id = std::move(task_id), failure = std::move(failure), permanent,
         result = std::move(result)](NatsChannel& c) mutable {
            c.on_ack(task_id, std::move(failure), permanent, std::move(result));
        });
}

}  // namespace

NatsChannel::NatsChannel(store::TargetSettings settings, targets::ChannelContext context)
    : settings_(std::move(settings)),
      context_(std::move(context)),
      whole_task_(targets::sends_whole_task(settings_)),
      state_(context_.metrics, context_.database, settings_.name, "nats") {}

NatsChannel::~NatsChannel() { release(); }

void NatsChannel::start() {
    bridge_ = new Bridge;  // NOLINT(cppcoreguidelines-owning-memory): kept for nats.c, see Bridge
    bridge_->loop = context_.loop;
    bridge_->channel = weak_from_this();
    connector_ = std::thread([bridge = bridge_, settings = settings_, policy = &context_.policy] {
        const auto servers = parse_servers(settings.url);
        // The servers' addresses are checked before each try, until they pass.
        auto wait = std::chrono::milliseconds{500};
        while (true) {
            std::optional<std::string> problem;
            for (const auto& server : servers) {
                problem = broker::checked_addresses({server.host, server.port, server.tls}, *policy)
                              .problem;
                if (problem) break;
            }
            if (!problem) break;
            bridge->post([why = "url " + *problem](NatsChannel& c) { c.on_state(false, why); });
            std::unique_lock lock{bridge->mutex};
            if (bridge->wake.wait_for(lock, wait, [&] { return bridge->stopping; })) return;
            wait = std::min(wait * 2, std::chrono::milliseconds{30000});
        }
        natsOptions* options = nullptr;
        natsConnection* nc = nullptr;
        jsCtx* js = nullptr;
        natsStatus status = natsOptions_Create(&options);
        std::vector<const char*> pointers;
        pointers.reserve(servers.size());
        for (const auto& server : servers) pointers.push_back(server.url.c_str());
        const auto option = [&](const char* name) -> const std::string* {
            const auto it = settings.options.find(name);
            return it == settings.options.end() ? nullptr : &it->second;
        };
        const auto credential = [&](const char* name) -> const std::string* {
            const auto it = settings.credentials.find(name);
            return it == settings.credentials.end() ? nullptr : &it->second;
        };
        if (status == NATS_OK) {
            status =
                natsOptions_SetServers(options, pointers.data(), static_cast<int>(pointers.size()));
        }
        if (status == NATS_OK && option("user")) {
            const auto* password = credential("password");
            status = natsOptions_SetUserInfo(options, option("user")->c_str(),
                                             password ? password->c_str() : "");
        }
        if (status == NATS_OK && credential("token")) {
            status = natsOptions_SetToken(options, credential("token")->c_str());
        }
        if (status == NATS_OK && option("creds_file")) {
            status = natsOptions_SetUserCredentialsFromFiles(options, option("creds_file")->c_str(),
                                                             nullptr);
        }
        if (status == NATS_OK && option("nkey")) {
            status = natsOptions_SetNKeyFromSeed(options, option("nkey")->c_str(),
                                                 option("nkey_seed_file")->c_str());
        }
        const bool tls =
            std::any_of(servers.begin(), servers.end(), [](const ServerUrl& s) { return s.tls; });
        if (status == NATS_OK && (tls || settings.ca_file))
            status = natsOptions_SetSecure(options, true);
        if (status == NATS_OK && settings.ca_file) {
            status = natsOptions_LoadCATrustedCertificates(options, settings.ca_file->c_str());
        }
        if (status == NATS_OK)
            status = natsOptions_SetTimeout(options, std::min(settings.timeout_ms, 10000));
        if (status == NATS_OK) status = natsOptions_SetMaxReconnect(options, -1);
        if (status == NATS_OK) status = natsOptions_SetReconnectWait(options, 250);
        if (status == NATS_OK) status = natsOptions_SetPingInterval(options, 5000);
        if (status == NATS_OK)
            status = natsOptions_SetDisconnectedCB(options, on_disconnected, bridge);
        if (status == NATS_OK) status = natsOptions_SetReconnectedCB(options, on_connected, bridge);
        if (status == NATS_OK) status = natsOptions_SetClosedCB(options, on_closed, bridge);
        if (status == NATS_OK) {
            status = natsOptions_SetRetryOnFailedConnect(options, true, on_connected, bridge);
        }
        bool up = false;
        std::string why;
        if (status == NATS_OK) {
            status = natsConnection_Connect(&nc, options);
            up = status == NATS_OK;
            if (status == NATS_NOT_YET_CONNECTED) {
                // nats.c keeps trying in the background: say why the first try failed.
                const char* text = nullptr;
                const auto last = natsConnection_GetLastError(nc, &text);
                why = "not connected yet, retrying: " +
                      (text != nullptr && *text != '\0'
                           ? util::sanitize_text(text, 300)
                           : std::string{natsStatus_GetText(last == NATS_OK ? status : last)});
                status = NATS_OK;
            }
        }
        if (status == NATS_OK) {
            jsOptions js_options;
            jsOptions_Init(&js_options);
            js_options.Wait = settings.timeout_ms;
            // Above any share of max_in_flight (at most 10,000): the credit bounds what is out.
            js_options.PublishAsync.MaxPending = std::int64_t{2} * 10000;
            js_options.PublishAsync.AckHandler = on_pub_ack;
            js_options.PublishAsync.AckHandlerClosure = bridge;
            status = natsConnection_JetStream(&js, nc, &js_options);
        }
        if (status != NATS_OK) why = status_text(status);
        natsOptions_Destroy(options);
        {
            std::lock_guard lock{bridge->mutex};
            bridge->nc = nc;
            bridge->js = js;
        }
        bridge->post([up, why](NatsChannel& c) {
            c.on_connection();
            c.on_state(up, why);
        });
    });
}

void NatsChannel::on_connection() {
    if (closed_) return;  // release() closes what the connector made
    std::lock_guard lock{bridge_->mutex};
    nc_ = bridge_->nc;
    js_ = bridge_->js;
}

void NatsChannel::on_state(bool up, const std::string& why) {
    if (closed_) return;
    up = up && js_ != nullptr;
    if (state_.set_connected(up, why) && context_.ready) context_.ready(up);
}

std::optional<std::string> NatsChannel::send_task(const sinks::Task& task) {
    if (closed_) return std::string{"the NATS target was removed"};
    const auto subject = expand_template(settings_.options.at("subject"), task);
    if (auto why = subject_problem(subject)) {
        return "subject '" + util::sanitize_text(subject, 200) + "' " + *why;
    }
    if (js_ == nullptr) {
        boost::asio::post(context_.loop, [self = weak_from_this(), id = task.task_id] {
            if (auto c = self.lock()) c->on_ack(id, "not connected to the NATS server", false);
        });
        pending_.emplace(task.task_id, Clock::now());
        state_.published();
        return std::nullopt;
    }
    const auto body = whole_task_ ? worker::protocol::encode(task) : task.input_json;
    natsMsg* msg = nullptr;
    natsStatus status =
        natsMsg_Create(&msg, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
    if (status == NATS_OK)
        status = natsMsgHeader_Set(msg, "Nats-Msg-Id", header_safe(task.dispatch_key).c_str());
    for (const auto& [name, value] : task_headers(task)) {
        if (status == NATS_OK) status = natsMsgHeader_Set(msg, name.c_str(), value.c_str());
    }
    if (status == NATS_OK) {
        jsPubOptions options;
        jsPubOptions_Init(&options);
        options.MaxWait = settings_.timeout_ms;
        status = js_PublishMsgAsync(js_, &msg, &options);
    }
    if (msg != nullptr) natsMsg_Destroy(msg);  // not taken by nats.c
    pending_.emplace(task.task_id, Clock::now());
    state_.published();
    if (status != NATS_OK) {
        boost::asio::post(context_.loop,
                          [self = weak_from_this(), id = task.task_id, why = status_text(status)] {
                              if (auto c = self.lock())
                                  c->on_ack(id, "NATS publish failed: " + why, false);
                          });
    }
    return std::nullopt;
}

void NatsChannel::on_ack(const std::string& task_id, std::optional<std::string> error,
                         bool permanent, std::optional<std::string> result) {
    const auto it = pending_.find(task_id);
    if (it == pending_.end()) return;  // answered already (closed, or a late ack)
    pending_.erase(it);
    if (error) {
        state_.failed(*error, permanent);
        context_.answers.failed(task_id, std::move(*error), !permanent, {});
    } else {
        state_.acked();
        context_.answers.done(task_id, std::move(result));
    }
}

void NatsChannel::fail_all(const std::string& why) {
    auto pending = std::exchange(pending_, {});
    state_.forget(pending.size());
    for (const auto& [task_id, since] : pending) context_.answers.failed(task_id, why, true, {});
}

void NatsChannel::close(std::string_view reason) {
    if (closed_) return;
    closed_ = true;
    fail_all("the NATS target closed: " + std::string{reason});
    release();
    state_.closed();
}

void NatsChannel::release() {
    closed_ = true;
    if (bridge_ == nullptr) return;
    {
        std::lock_guard lock{bridge_->mutex};
        bridge_->stopping = true;
    }
    bridge_->wake.notify_all();
    if (connector_.joinable()) connector_.join();
    // The connector is done: what it made is in the bridge, whether or not its post ran.
    std::lock_guard lock{bridge_->mutex};
    js_ = nullptr;
    nc_ = nullptr;
    if (auto* js = std::exchange(bridge_->js, nullptr)) jsCtx_Destroy(js);
    if (auto* nc = std::exchange(bridge_->nc, nullptr)) {
        natsConnection_Close(nc);
        natsConnection_Destroy(nc);
    }
}

}  // namespace outboxd::sinks::nats::detail
