// ProtoReader: a bounds-checked reader of the protocol-buffer wire format (the public encoding of varints, length-
// delimited fields and fixed 32/64-bit values), enough for SentencePiece's model files. Every read names the file and
// the message it is in when the bytes run out or a field is malformed.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace attnscope::core {

class ProtoReader {
public:
    ProtoReader(std::string_view bytes, const std::string& file, std::string what)
        : m_b(bytes)
        , m_file(file)
        , m_what(std::move(what))
    {
    }
    bool more() const { return m_pos < m_b.size(); }
    [[noreturn]] void fail(const std::string& msg) const
    {
        throw Error(ErrorCode::CorruptFile, msg + " (at byte " + std::to_string(m_pos) + ")", m_file, m_what);
    }
    std::uint64_t varint()
    {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!more())
                fail("truncated varint");
            const auto b = static_cast<unsigned char>(m_b[m_pos++]);
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80))
                return v;
        }
        fail("varint too long");
    }
    std::string_view bytes()
    {
        const auto len = varint();
        if (len > m_b.size() - m_pos)
            fail("length " + std::to_string(len) + " runs past the end");
        const auto s = m_b.substr(m_pos, len);
        m_pos += len;
        return s;
    }
    float fixed32()
    {
        if (m_b.size() - m_pos < 4)
            fail("truncated 32-bit value");
        float f;
        std::memcpy(&f, m_b.data() + m_pos, 4);
        m_pos += 4;
        return f;
    }
    void skip(int wire)
    {
        switch (wire) {
        case 0: varint(); break;
        case 1:
            if (m_b.size() - m_pos < 8)
                fail("truncated 64-bit value");
            m_pos += 8;
            break;
        case 2: bytes(); break;
        case 5: fixed32(); break;
        default: fail("unknown wire type " + std::to_string(wire));
        }
    }

private:
    std::string_view m_b;
    std::size_t m_pos = 0;
    const std::string& m_file;
    std::string m_what;
};

} // namespace attnscope::core
