#pragma once

// Just enough of RFC 6455 to speak to a node's worker socket over a RawSocket, including
// frames a conforming client never sends (wrong opcodes, reserved bits, unmasked frames,
// lengths that lie).

#include <cstdint>
#include <optional>
#include <string>

namespace outboxd::chaos {

inline constexpr std::uint8_t kWsFin = 0x80;
inline constexpr std::uint8_t kWsText = 0x1;
inline constexpr std::uint8_t kWsBinary = 0x2;
inline constexpr std::uint8_t kWsPing = 0x9;

// An HTTP/1.1 upgrade request for `target`.
[[nodiscard]] std::string ws_upgrade_request(const std::string& target);

struct WsFrameShape {
    std::uint8_t first_byte = kWsFin | kWsText;   // FIN, RSV1-3, opcode
    bool masked = true;                           // clients must mask
    std::optional<std::uint64_t> claimed_length;  // a length field that lies
};

// One client frame carrying `payload`.
[[nodiscard]] std::string ws_frame(const std::string& payload, WsFrameShape shape = {});

// Removes the first whole server frame from `buffer`; returns its payload when it is a text
// frame, an empty optional otherwise (another opcode, or no whole frame yet: then
// `complete` is false and nothing is removed).
[[nodiscard]] std::optional<std::string> take_server_text(std::string& buffer, bool& complete);

}  // namespace outboxd::chaos
