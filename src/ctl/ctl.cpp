#include "outboxd/ctl/ctl.hpp"

#include <array>
#include <cstdlib>
#include <ostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api_client.hpp"
#include "outboxd/util/secret_file.hpp"
#include "table.hpp"

namespace outboxd::ctl {
namespace {

using nlohmann::json;

constexpr int kApiRefused = 1;
constexpr int kUsage = 2;
constexpr int kUnreachable = 3;

// The API answered with an error: its status, code and message.
struct Refused {
    int status = 0;
    std::string code;
    std::string message;
};

std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string{value};
}

// A setting that cannot be used (exit status 2, like bad usage).
struct BadSetting {
    std::string message;
};

// The token in `name`, or the content of the file `name`_FILE names (so that it need not
// sit in the environment); not both.
std::optional<std::string> token_from(const std::string& name) {
    auto direct = env(name.c_str());
    const auto file_setting = name + "_FILE";
    const auto file = env(file_setting.c_str());
    if (!file) return direct;
    if (direct) throw BadSetting{name + " and " + file_setting + " are both set; set only one"};
    try {
        return util::read_secret_file(*file);
    } catch (const std::runtime_error& error) {
        throw BadSetting{file_setting + ": " + error.what()};
    }
}

// The credential: OUTBOXD_TOKEN (any credential: a scoped one sees and may do what it
// grants), else the bootstrap OUTBOXD_ADMIN_TOKEN; each may come from its _FILE.
std::optional<std::string> credential() {
    if (auto token = token_from("OUTBOXD_TOKEN")) return token;
    return token_from("OUTBOXD_ADMIN_TOKEN");
}

// What every command shares: the node, the output mode and the streams.
struct Context {
    std::string url = env("OUTBOXD_URL").value_or("http://127.0.0.1:8080");
    // Sent as ?database= on every call: the outbox database to act on (none: the node's
    // one, or every one for listings and bulk actions).
    std::optional<std::string> database = env("OUTBOXD_DATABASE");
    std::optional<std::string> ca_file;
    std::optional<std::string> token;  // credential(), read before the command runs
    bool json_out = false;
    std::ostream* out = nullptr;

    // Sends a request; a 2xx answer's JSON, else throws Refused. ReachError when the node
    // cannot be reached or its answer is not JSON.
    json call(std::string_view method, const std::string& target,
              const json& body = nullptr) const {
        const ApiClient client{parse_endpoint(url), {token, ca_file}};
        const auto reply =
            client.call(method, database ? with_query(target, "database", *database) : target,
                        body.is_null() ? std::string{} : body.dump());
        json answer;
        try {
            answer = json::parse(reply.body);
        } catch (const json::parse_error&) {
            throw ReachError{"the node at " + url + " answered HTTP " +
                             std::to_string(reply.status) + " with something that is not JSON"};
        }
        if (reply.status >= 200 && reply.status < 300) return answer;
        const auto error = answer.is_object() ? answer.value("error", json::object()) : json{};
        throw Refused{reply.status, error.is_object() ? error.value("code", "") : "",
                      error.is_object() ? error.value("message", reply.body) : reply.body};
    }

    // Prints `answer` as JSON when --json was given; returns whether it did.
    bool printed_json(const json& answer) const {
        if (json_out) *out << answer.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
        return json_out;
    }
};

std::string path(std::initializer_list<std::string_view> segments) {
    std::string out;
    for (const auto segment : segments) out += "/" + encode_component(segment);
    return out;
}

// Dead-letter filters, as query parameters (list) or body fields (bulk).
struct Filters {
    std::optional<std::string> namespace_name;
    std::optional<std::string> activity_type;
    std::optional<std::string> error;
    std::optional<std::int64_t> older_than_s;
    std::optional<std::int32_t> limit;

    void bind(CLI::App& command) {
        command.add_option("--namespace", namespace_name, "Only this namespace");
        command.add_option("--activity-type", activity_type, "Only this activity type");
        command.add_option("--error", error, "Only letters whose last error contains this text");
        command.add_option("--older-than-s", older_than_s, "Only letters failed this long ago");
        command.add_option("--limit", limit, "At most this many letters");
    }
    [[nodiscard]] bool any() const {
        return namespace_name || activity_type || error || older_than_s;
    }
    [[nodiscard]] std::string query(const std::optional<std::string>& after) const {
        std::string q;
        const auto add = [&q](const char* key, const std::string& value) {
            q += (q.empty() ? "?" : "&") + std::string{key} + "=" + encode_component(value);
        };
        if (namespace_name) add("namespace", *namespace_name);
        if (activity_type) add("activity_type", *activity_type);
        if (error) add("error", *error);
        if (older_than_s) add("older_than_s", std::to_string(*older_than_s));
        if (limit) add("limit", std::to_string(*limit));
        if (after) add("after", *after);
        return q;
    }
    [[nodiscard]] json body() const {
        json b = json::object();
        if (namespace_name) b["namespace"] = *namespace_name;
        if (activity_type) b["activity_type"] = *activity_type;
        if (error) b["error_contains"] = *error;
        if (older_than_s) b["older_than_s"] = *older_than_s;
        if (limit) b["limit"] = *limit;
        return b;
    }
};

void print_cluster(const Context& ctx) {
    const auto answer = ctx.call("GET", "/v1/cluster");
    if (ctx.printed_json(answer)) return;
    Table table{{"NODE", "URL", "STATE", "SHARDS", "RANGES"}};
    std::int64_t owned = 0;
    for (const auto& node : answer.value("nodes", json::array())) {
        std::int64_t shards = 0;
        std::string ranges;
        for (const auto& range : node.value("shards", json::array())) {
            const auto lo = range.at(0).get<std::int64_t>();
            const auto hi = range.at(1).get<std::int64_t>();
            shards += hi - lo + 1;
            ranges += (ranges.empty() ? "" : " ") + std::to_string(lo) + "-" + std::to_string(hi);
        }
        owned += shards;
        table.add({cell(node.value("node_id", json{})), cell(node.value("url", json{}), 80),
                   node.value("draining", false) ? "draining" : "live", std::to_string(shards),
                   cell(ranges, 80)});
    }
    table.print(*ctx.out);
    *ctx.out << answer.value("nodes", json::array()).size() << " nodes, " << owned
             << " of 1024 shards owned\n";
}

void print_namespaces(const Context& ctx) {
    const auto answer = ctx.call("GET", "/v1/namespaces");
    if (ctx.printed_json(answer)) return;
    const auto items = answer.value("namespaces", json::array());
    const DatabaseColumn database{items};
    Table table{database.headers({"NAMESPACE", "PENDING", "CLAIMED", "DEAD", "DONE/MIN",
                                  "FAILED/MIN", "WEIGHT", "MAX_IN_FLIGHT", "ORDERING"})};
    for (const auto& ns : items) {
        const auto settings = ns.value("settings", json::object());
        const auto finished = ns.value("finished_last_minute", json::object());
        table.add(database.cells(
            ns, {cell(ns.value("namespace", json{})), cell(ns.value("pending", json{})),
                 cell(ns.value("claimed", json{})), cell(ns.value("dead_letters", json{})),
                 cell(finished.value("done", json{})), cell(finished.value("failed", json{})),
                 cell(settings.value("weight", json{})),
                 cell(settings.value("effective_max_in_flight", json{})),
                 cell(settings.value("ordering", json{}))}));
    }
    table.print(*ctx.out);
}

// The fields PUT /v1/namespaces/{ns} takes, as GET shows them.
constexpr std::array kSettingFields{"max_in_flight",  "placement",  "weight",     "ordering",
                                    "on_dead_letter", "rate_limit", "activities", "keep_results"};

struct NamespaceEdit {
    std::string name;
    std::optional<std::int64_t> max_in_flight;
    std::optional<std::int64_t> weight;
    std::optional<std::string> keep_results;
    std::optional<std::string> ordering;
    std::optional<std::string> on_dead_letter;
    std::optional<std::string> body;
};

// Changes only the fields named: reads the settings, applies the flags and --body's fields
// over them, and writes them back.
void set_namespace(const Context& ctx, const NamespaceEdit& edit) {
    const auto current = ctx.call("GET", path({"v1", "namespaces", edit.name}));
    json next = json::object();
    for (const auto* field : kSettingFields) {
        if (current.contains(field)) next[field] = current[field];
    }
    if (edit.body) {
        json patch;
        try {
            patch = json::parse(*edit.body);
        } catch (const json::parse_error& error) {
            throw CLI::ValidationError{"--body", std::string{"not valid JSON: "} + error.what()};
        }
        if (!patch.is_object()) throw CLI::ValidationError{"--body", "must be a JSON object"};
        for (const auto& [key, value] : patch.items()) next[key] = value;
    }
    if (edit.max_in_flight) next["max_in_flight"] = *edit.max_in_flight;
    if (edit.weight) next["weight"] = *edit.weight;
    if (edit.keep_results) next["keep_results"] = *edit.keep_results == "true";
    if (edit.ordering) next["ordering"] = *edit.ordering;
    if (edit.on_dead_letter) next["on_dead_letter"] = *edit.on_dead_letter;
    const auto answer = ctx.call("PUT", path({"v1", "namespaces", edit.name}), next);
    if (!ctx.printed_json(answer)) print_fields(*ctx.out, answer);
}

void list_dead_letters(const Context& ctx, const Filters& filters,
                       const std::optional<std::string>& after) {
    const auto answer = ctx.call("GET", "/v1/dead-letters" + filters.query(after));
    if (ctx.printed_json(answer)) return;
    const auto items = answer.value("dead_letters", json::array());
    const DatabaseColumn database{items};
    Table table{database.headers(
        {"DISPATCH_KEY", "NAMESPACE", "ACTIVITY", "ATTEMPT", "FAILED_AT", "ERROR"})};
    for (const auto& l : items) {
        table.add(database.cells(
            l, {cell(l.value("dispatch_key", json{})), cell(l.value("namespace", json{})),
                cell(l.value("activity_type", json{})), cell(l.value("attempt", json{})),
                cell(l.value("failed_at", json{})), cell(l.value("last_error", json{}))}));
    }
    table.print(*ctx.out);
    if (const auto next = answer.value("next", json{}); next.is_string()) {
        *ctx.out << "more: --after " << next.get<std::string>() << '\n';
    }
}

void bulk_dead_letters(const Context& ctx, const std::string& action, const Filters& filters,
                       bool all) {
    if (!filters.any() && !all) {
        throw CLI::ValidationError{action,
                                   "name a filter (--namespace, --activity-type, --error, "
                                   "--older-than-s) or --all for every dead letter"};
    }
    const auto answer = ctx.call("POST", "/v1/dead-letters/" + action, filters.body());
    if (ctx.printed_json(answer)) return;
    const auto* counted = action == "requeue" ? "requeued" : "purged";
    *ctx.out << counted << " " << cell(answer.value(counted, json{}));
    // Over several databases, how many in each.
    if (const auto each = answer.value("by_database", json::object()); each.size() > 1) {
        std::string parts;
        for (const auto& [database, count] : each.items()) {
            parts += (parts.empty() ? "" : ", ") + database + " " + cell(count);
        }
        *ctx.out << " (" << parts << ")";
    }
    *ctx.out << '\n';
}

void show_workflow(const Context& ctx, const std::string& id, bool all) {
    const auto answer =
        ctx.call("GET", path({"v1", "workflows", id}) + (all ? "?all=true&limit=1000" : ""));
    if (ctx.printed_json(answer)) return;
    *ctx.out << "workflow " << cell(answer.value("workflow_id", json{}), 200)
             << (answer.value("paused", false) ? " (paused)" : "")
             << (answer.value("cancelled", false) ? " (cancelled)" : "") << '\n';
    if (const auto blocked = answer.value("blocked_by", json{}); blocked.is_string()) {
        *ctx.out << "held back by the dead letter " << cell(blocked, 200) << '\n';
    }
    Table table{{"DISPATCH_KEY", "ORDINAL", "STATUS", "ACTIVITY", "ATTEMPT", "LAST_ERROR"}};
    for (const auto& row : answer.value("rows", json::array())) {
        table.add({cell(row.value("dispatch_key", json{})), cell(row.value("ordinal", json{})),
                   cell(row.value("status", json{})), cell(row.value("activity_type", json{})),
                   cell(row.value("attempt", json{})), cell(row.value("last_error", json{}))});
    }
    table.print(*ctx.out);
}

void workflow_action(const Context& ctx, const std::string& id, const std::string& action) {
    const auto answer = ctx.call("POST", path({"v1", "workflows", id, action}));
    if (ctx.printed_json(answer)) return;
    if (action == "cancel") {
        const auto keys = answer.value("cancelled", json::array());
        *ctx.out << "cancelled " << keys.size() << " rows";
        for (const auto& key : keys) *ctx.out << "\n  " << cell(key, 200);
        *ctx.out << '\n';
        return;
    }
    if (action == "uncancel") {
        *ctx.out << "workflow " << id
                 << (answer.value("uncancelled", false)
                         ? " uncancelled: rows staged from now on run"
                         : " was not cancelled")
                 << '\n';
        return;
    }
    const bool changed = answer.value("changed", false);
    *ctx.out << "workflow " << id << (action == "pause" ? " paused" : " resumed")
             << (changed ? "" : " (it already was)") << '\n';
}

void show_fields(const Context& ctx, const std::string& target) {
    const auto answer = ctx.call("GET", target);
    if (!ctx.printed_json(answer)) print_fields(*ctx.out, answer);
}

// A new credential's flags.
struct CredentialSpec {
    std::string name;
    std::vector<std::string> namespaces;
    std::vector<std::string> roles;
    std::vector<std::string> nodes;
    std::optional<std::string> expires_at;
};

void create_credential(const Context& ctx, const CredentialSpec& spec) {
    json body = {{"name", spec.name}, {"namespaces", spec.namespaces}, {"roles", spec.roles}};
    if (!spec.nodes.empty()) body["nodes"] = spec.nodes;
    if (spec.expires_at) body["expires_at"] = *spec.expires_at;
    const auto answer = ctx.call("POST", "/v1/credentials", body);
    if (ctx.printed_json(answer)) return;
    print_fields(*ctx.out, answer);
    *ctx.out << "the secret is shown once: store it now\n";
}

void list_credentials(const Context& ctx) {
    const auto answer = ctx.call("GET", "/v1/credentials");
    if (ctx.printed_json(answer)) return;
    Table table{{"ID", "NAME", "NAMESPACES", "ROLES", "EXPIRES_AT", "CREATED_BY"}};
    for (const auto& c : answer.value("credentials", json::array())) {
        table.add({cell(c.value("id", json{})), cell(c.value("name", json{})),
                   cell(c.value("namespaces", json{})), cell(c.value("roles", json{})),
                   c.value("expired", false) ? "expired" : cell(c.value("expires_at", json{})),
                   cell(c.value("created_by", json{}))});
    }
    table.print(*ctx.out);
}

void list_audit(const Context& ctx, const std::optional<std::int32_t>& limit,
                const std::optional<std::string>& after) {
    std::string query;
    if (limit) query += "?limit=" + std::to_string(*limit);
    if (after)
        query += (query.empty() ? "?" : "&") + std::string{"after="} + encode_component(*after);
    const auto answer = ctx.call("GET", "/v1/audit" + query);
    if (ctx.printed_json(answer)) return;
    const auto items = answer.value("audit", json::array());
    const DatabaseColumn database{items};
    Table table{database.headers({"AT", "CREDENTIAL", "METHOD", "ROUTE", "NAMESPACE", "CHANGE"})};
    for (const auto& e : items) {
        table.add(database.cells(
            e, {cell(e.value("at", json{})), cell(e.value("credential_id", json{})),
                cell(e.value("method", json{})), cell(e.value("route", json{})),
                cell(e.value("namespace", json{})), cell(e.value("change", json{}), 80)}));
    }
    table.print(*ctx.out);
    if (const auto next = answer.value("next", json{}); next.is_string()) {
        *ctx.out << "more: --after " << next.get<std::string>() << '\n';
    }
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    CLI::App app{
        "outboxd ctl: operate a cluster over a node's HTTP API. The credential comes from "
        "OUTBOXD_TOKEN, else OUTBOXD_ADMIN_TOKEN, or from the file their _FILE form names. "
        "On a node that serves several outbox databases, --database names the one to act on; "
        "listings and bulk actions without it cover every database (a DATABASE column shows "
        "where each item is).",
        "outboxd ctl"};
    Context ctx;
    ctx.out = &out;
    app.add_option("--url", ctx.url, "The node's API (env OUTBOXD_URL)")->capture_default_str();
    app.add_option("--ca-file", ctx.ca_file, "Trust this CA for an https:// node");
    app.add_option("--database", ctx.database,
                   "The outbox database to act on, sent as ?database= (env OUTBOXD_DATABASE); "
                   "required by row, workflow and single-item commands when the node serves "
                   "several");
    app.add_flag("--json", ctx.json_out, "Print the API's JSON instead of tables");
    app.require_subcommand(1);
    std::function<void()> action;

    app.add_subcommand("status", "Live nodes, their URLs and shard ranges")->callback([&] {
        action = [&] { print_cluster(ctx); };
    });

    auto* ns = app.add_subcommand("namespace", "Namespaces: list, get, set");
    ns->require_subcommand(1);
    ns->add_subcommand("list", "Every namespace's rows and main settings")->callback([&] {
        action = [&] { print_namespaces(ctx); };
    });
    std::string ns_name;
    auto* ns_get = ns->add_subcommand("get", "A namespace's settings");
    ns_get->add_option("namespace", ns_name)->required();
    ns_get->callback([&] {
        action = [&] { show_fields(ctx, path({"v1", "namespaces", ns_name})); };
    });
    NamespaceEdit edit;
    auto* ns_set = ns->add_subcommand("set", "Change the settings named, keep the others");
    ns_set->add_option("namespace", edit.name)->required();
    ns_set->add_option("--max-in-flight", edit.max_in_flight, "Claimed rows at once");
    ns_set->add_option("--weight", edit.weight, "Share of each claim round (1..1000)");
    ns_set->add_option("--keep-results", edit.keep_results, "Store results")
        ->check(CLI::IsMember({"true", "false"}));
    ns_set->add_option("--ordering", edit.ordering, "none or workflow")
        ->check(CLI::IsMember({"none", "workflow"}));
    ns_set->add_option("--on-dead-letter", edit.on_dead_letter, "block or skip")
        ->check(CLI::IsMember({"block", "skip"}));
    ns_set->add_option("--body", edit.body,
                       "A JSON object of settings to apply, e.g. "
                       "'{\"rate_limit\":{\"per_second\":50,\"burst\":10}}'");
    ns_set->callback([&] { action = [&] { set_namespace(ctx, edit); }; });

    auto* dl = app.add_subcommand("dead-letters", "Dead letters: list, requeue, purge");
    dl->require_subcommand(1);
    Filters filters;
    std::optional<std::string> after;
    auto* dl_list = dl->add_subcommand("list", "Newest first, a page at a time");
    filters.bind(*dl_list);
    dl_list->add_option("--after", after, "The cursor a previous page printed");
    dl_list->callback([&] { action = [&] { list_dead_letters(ctx, filters, after); }; });
    std::vector<std::string> keys;
    bool all = false;
    auto* dl_requeue = dl->add_subcommand("requeue", "Make dead letters pending again");
    dl_requeue->add_option("dispatch_keys", keys, "These letters (else the filters)");
    filters.bind(*dl_requeue);
    dl_requeue->add_flag("--all", all, "Every letter the filters match, or all of them");
    dl_requeue->callback([&] {
        action = [&] {
            if (keys.empty()) return bulk_dead_letters(ctx, "requeue", filters, all);
            for (const auto& key : keys) {
                const auto answer = ctx.call("POST", path({"v1", "dead-letters", key, "requeue"}));
                if (!ctx.printed_json(answer)) out << "requeued " << key << '\n';
            }
        };
    });
    auto* dl_purge = dl->add_subcommand("purge", "Delete dead letters for good");
    filters.bind(*dl_purge);
    dl_purge->add_flag("--all", all, "Every letter the filters match, or all of them");
    dl_purge->callback([&] { action = [&] { bulk_dead_letters(ctx, "purge", filters, all); }; });

    auto* wf = app.add_subcommand("workflow", "A workflow: show, pause, resume, cancel, uncancel");
    wf->require_subcommand(1);
    std::string workflow;
    bool every_row = false;
    auto* wf_show = wf->add_subcommand("show", "Its rows and their states");
    wf_show->add_option("workflow_id", workflow)->required();
    wf_show->add_flag("--all", every_row, "Finished rows too (reads the table; not for polling)");
    wf_show->callback([&] { action = [&] { show_workflow(ctx, workflow, every_row); }; });
    for (const char* verb : {"pause", "resume", "cancel", "uncancel"}) {
        auto* command = wf->add_subcommand(verb, std::string{verb} + " the workflow");
        command->add_option("workflow_id", workflow)->required();
        command->callback(
            [&, verb] { action = [&, verb] { workflow_action(ctx, workflow, verb); }; });
    }

    auto* row = app.add_subcommand("row", "One outbox row");
    row->require_subcommand(1);
    std::string key;
    auto* row_show = row->add_subcommand("show", "Its state, input, result and progress");
    row_show->add_option("dispatch_key", key)->required();
    row_show->callback([&] { action = [&] { show_fields(ctx, path({"v1", "outbox", key})); }; });

    auto* cred = app.add_subcommand("credentials", "Credentials: create, list, show, delete");
    cred->require_subcommand(1);
    CredentialSpec spec;
    auto* cred_create = cred->add_subcommand("create", "A credential; prints its secret once");
    cred_create->add_option("name", spec.name)->required();
    cred_create->add_option("--namespace", spec.namespaces, "A namespace it reaches, or '*'")
        ->required();
    cred_create
        ->add_option("--role", spec.roles,
                     "worker, producer, reader, read_payloads, operator or admin")
        ->required();
    cred_create->add_option("--node", spec.nodes, "A node label its workers may claim on");
    cred_create->add_option("--expires-at", spec.expires_at, "RFC 3339 time it stops working");
    cred_create->callback([&] { action = [&] { create_credential(ctx, spec); }; });
    cred->add_subcommand("list", "Every credential (never a secret)")->callback([&] {
        action = [&] { list_credentials(ctx); };
    });
    std::string credential_id;
    auto* cred_show = cred->add_subcommand("show", "One credential");
    cred_show->add_option("id", credential_id)->required();
    cred_show->callback([&] {
        action = [&] { show_fields(ctx, path({"v1", "credentials", credential_id})); };
    });
    auto* cred_delete = cred->add_subcommand("delete", "Revoke a credential");
    cred_delete->add_option("id", credential_id)->required();
    cred_delete->callback([&] {
        action = [&] {
            const auto answer = ctx.call("DELETE", path({"v1", "credentials", credential_id}));
            if (!ctx.printed_json(answer)) out << "deleted " << credential_id << '\n';
        };
    });

    std::optional<std::int32_t> audit_limit;
    std::optional<std::string> audit_after;
    auto* audit = app.add_subcommand("audit", "Changes made through the API, newest first");
    audit->add_option("--limit", audit_limit, "At most this many entries");
    audit->add_option("--after", audit_after, "The cursor a previous page printed");
    audit->callback([&] { action = [&] { list_audit(ctx, audit_limit, audit_after); }; });

    try {
        app.parse(argc, argv);
        ctx.token = credential();
        if (action) action();
        return 0;
    } catch (const BadSetting& bad) {
        err << "outboxd ctl: " << bad.message << '\n';
        return kUsage;
    } catch (const CLI::ParseError& error) {
        // --help and --version are "errors" that succeed.
        const int code = app.exit(error, out, err);
        return code == 0 ? 0 : kUsage;
    } catch (const Refused& refused) {
        err << "outboxd ctl: " << refused.message << " (HTTP " << refused.status
            << (refused.code.empty() ? "" : ", " + refused.code) << ")\n";
        return kApiRefused;
    } catch (const ReachError& error) {
        err << "outboxd ctl: " << error.what() << '\n';
        return kUnreachable;
    } catch (const nlohmann::json::exception& error) {
        err << "outboxd ctl: the node's answer has an unexpected shape: " << error.what() << '\n';
        return kUnreachable;
    }
}

}  // namespace outboxd::ctl
