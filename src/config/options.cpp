#include <cstdlib>

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

}  // namespace

void Options::bind(CLI::App& app) {
    const Config defaults;
    for (const detail::Field& field : detail::fields()) {
        const std::string key{field.setting.key};
        // The callback stores text only: resolve() converts it so that every error, whether
        // from a flag or a variable, is reported the same way, naming both.
        app.add_option(
               "--" + key,
               [this, key](const CLI::results_t& results) {
                   raw_[key] = results.empty() ? std::string{} : results.back();
                   return true;
               },
               help_for(field, defaults))
            ->envname(std::string{field.setting.env})
            ->type_name(std::string{field.type_name})
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
}

Config Options::resolve() const {
    Config config;
    for (const detail::Field& field : detail::fields()) {
        const auto given = raw_.find(std::string{field.setting.key});
        if (given == raw_.end()) {
            if (!field.empty_means_default && set_but_empty(field.setting.env)) {
                throw ConfigError(std::string{field.setting.env} +
                                  " is set but empty; unset it or give it a value");
            }
            continue;
        }
        if (given->second.empty()) {
            if (field.empty_means_default) continue;
            detail::refuse(field.setting, "must not be empty");
        }
        field.apply(given->second, config);
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
    }
    return names;
}

std::vector<std::string> env_names() {
    std::vector<std::string> names;
    for (const detail::Field& field : detail::fields()) names.emplace_back(field.setting.env);
    return names;
}

}  // namespace outboxd::config
