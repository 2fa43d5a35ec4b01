#include "ws_frame.hpp"

#include <array>

namespace outboxd::chaos {

namespace {

constexpr std::array<std::uint8_t, 4> kMask{0x37, 0xfa, 0x21, 0x3d};
constexpr std::uint8_t kMaskBit = 0x80;
constexpr std::uint64_t kSmallLength = 125;
constexpr std::uint64_t kLength16 = 126;
constexpr std::uint64_t kLength64 = 127;

void append_big_endian(std::string& out, std::uint64_t value, int bytes) {
    for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((value >> shift) & 0xff));
    }
}

}  // namespace

std::string ws_upgrade_request(const std::string& target) {
    return "GET " + target +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

std::string ws_frame(const std::string& payload, WsFrameShape shape) {
    std::string out;
    out.push_back(static_cast<char>(shape.first_byte));
    const std::uint64_t length = shape.claimed_length.value_or(payload.size());
    const std::uint8_t mask_bit = shape.masked ? kMaskBit : 0;
    if (length <= kSmallLength) {
        out.push_back(static_cast<char>(mask_bit | length));
    } else if (length <= 0xffff) {
        out.push_back(static_cast<char>(mask_bit | kLength16));
        append_big_endian(out, length, 2);
    } else {
        out.push_back(static_cast<char>(mask_bit | kLength64));
        append_big_endian(out, length, 8);
    }
    if (!shape.masked) return out + payload;
    for (const auto byte : kMask) out.push_back(static_cast<char>(byte));
    for (std::size_t i = 0; i < payload.size(); ++i) {
        out.push_back(static_cast<char>(payload[i] ^ static_cast<char>(kMask[i % kMask.size()])));
    }
    return out;
}

std::optional<std::string> take_server_text(std::string& buffer, bool& complete) {
    complete = false;
    if (buffer.size() < 2) return std::nullopt;
    const auto byte = [&buffer](std::size_t i) { return static_cast<std::uint8_t>(buffer[i]); };
    std::uint64_t length = byte(1) & 0x7f;
    std::size_t header = 2;
    if (length == kLength16 || length == kLength64) {
        const int bytes = length == kLength16 ? 2 : 8;
        if (buffer.size() < header + static_cast<std::size_t>(bytes)) return std::nullopt;
        length = 0;
        for (int i = 0; i < bytes; ++i)
            length = (length << 8) | byte(header + static_cast<std::size_t>(i));
        header += static_cast<std::size_t>(bytes);
    }
    if (byte(1) & kMaskBit) header += kMask.size();  // servers do not mask; tolerate it
    if (buffer.size() < header + length) return std::nullopt;
    complete = true;
    const bool text = (byte(0) & 0x0f) == kWsText;
    std::string payload = buffer.substr(header, length);
    buffer.erase(0, header + length);
    if (!text) return std::nullopt;
    return payload;
}

}  // namespace outboxd::chaos
