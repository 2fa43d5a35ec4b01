#include <cstdlib>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "convert.hpp"
#include "fields.hpp"
#include "host_identity.hpp"
#include "outboxd/config/config.hpp"

namespace outboxd::config {
namespace {

std::string help_for(const detail::Field& field, const Config& defaults) {
    std::string help{field.help};
    help += " [default: " + field.show_default(defaults) + "]";
    if (field.setting.min != field.setting.max) {
        help += " [range: " + std::to_string(field.setting.min) + ".." +
                std::to_string(field.setting.max) + "]";
    }
    return help;
}

// CLI11 treats an empty environment value as unset; an operator who exported
// OUTBOXD_WORKER_TOKEN= most likely meant to set it, so it must not silently mean "open".
bool set_but_empty(std::string_view env) {
    const char* value = std::getenv(std::string{env}.c_str());
    return value != nullptr && *value == '\0';
}

void refuse_set_but_empty(std::string_view env) {
    throw ConfigError(std::string{env} + " is set but empty; unset it or give it a value");
}

// The text `field` was given, by its flag or variable or in the file its file twin names;
// nothing when it was not given. Throws ConfigError when a setting and its file twin are
// both set, when the file cannot be used, and when a variable is set but empty where that
// means nothing.
std::optional<std::string> given_text(const std::map<std::string, std::string>& raw,
                                      const detail::Field& field) {
    const auto direct = raw.find(std::string{field.setting.key});
    if (!field.file.key.empty()) {
        const auto file = raw.find(std::string{field.file.key});
        if (file != raw.end()) {
            if (direct != raw.end() || set_but_empty(field.setting.env)) {
                throw ConfigError(detail::label(field.setting) + " and " +
                                  detail::label(field.file) + " are both set; set only one");
            }
            return detail::read_setting_file(field.file, file->second);
        }
        if (set_but_empty(field.file.env)) refuse_set_but_empty(field.file.env);
    }
    if (direct == raw.end()) {
        if (!field.empty_means_default && set_but_empty(field.setting.env)) {
            refuse_set_but_empty(field.setting.env);
        }
        return std::nullopt;
    }
    return direct->second;
}

}  // namespace

void Options::bind(CLI::App& app) {
    const Config defaults;
    // The callback stores text only: resolve() converts it so that every error, whether
    // from a flag or a variable, is reported the same way, naming both.
    const auto add = [this, &app](const detail::Setting& setting, std::string_view type_name,
                                  const std::string& help) {
        const std::string key{setting.key};
        app.add_option(
               "--" + key,
               [this, key](const CLI::results_t& results) {
                   raw_[key] = results.empty() ? std::string{} : results.back();
                   return true;
               },
               help)
            ->envname(std::string{setting.env})
            ->type_name(std::string{type_name})
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    };
    for (const detail::Field& field : detail::fields()) {
        add(field.setting, field.type_name, help_for(field, defaults));
        if (!field.file.key.empty()) {
            add(field.file, "FILE",
                "read --" + std::string{field.setting.key} +
                    " from this file (trailing line breaks trimmed) instead; not with it");
        }
    }
}

Config Options::resolve() const {
    Config config;
    for (const detail::Field& field : detail::fields()) {
        const auto given = given_text(raw_, field);
        if (!given) continue;
        if (given->empty()) {
            if (field.empty_means_default) continue;
            detail::refuse(field.setting, "must not be empty");
        }
        field.apply(*given, config);
    }
    if (config.node_id.empty()) config.node_id = detail::default_node_id();
    if (config.advertise_url.empty()) {
        config.advertise_url =
            detail::default_advertise_url(config.listen, config.tls_cert_file.has_value());
    }
    validate(config);
    return config;
}

std::vector<std::string> flag_names() {
    std::vector<std::string> names;
    for (const detail::Field& field : detail::fields()) {
        names.push_back("--" + std::string{field.setting.key});
        if (!field.file.key.empty()) names.push_back("--" + std::string{field.file.key});
    }
    return names;
}

std::vector<std::string> env_names() {
    std::vector<std::string> names;
    for (const detail::Field& field : detail::fields()) {
        names.emplace_back(field.setting.env);
        if (!field.file.key.empty()) names.emplace_back(field.file.env);
    }
    return names;
}

}  // namespace outboxd::config
