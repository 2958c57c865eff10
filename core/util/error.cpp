// Error: composition of the user-facing message.
#include "util/error.h"

#include "util/message_text.h"

namespace attnscope::core {

const char* errorCodeName(ErrorCode code)
{
    switch (code) {
    case ErrorCode::Io: return "I/O error";
    case ErrorCode::CorruptFile: return "corrupt file";
    case ErrorCode::BadJson: return "invalid JSON";
    case ErrorCode::UnsupportedDtype: return "unsupported dtype";
    case ErrorCode::MissingTensor: return "missing tensor";
    case ErrorCode::ShapeMismatch: return "shape mismatch";
    case ErrorCode::UnknownModelType: return "unknown model type";
    case ErrorCode::UnsupportedTokenizer: return "unsupported tokenizer";
    case ErrorCode::BadConfig: return "bad config";
    case ErrorCode::BadInput: return "bad input";
    case ErrorCode::Unsafe: return "unsafe file";
    case ErrorCode::Cancelled: return "cancelled";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::Internal: return "internal error";
    }
    return "error";
}

Error::Error(ErrorCode code, std::string message, std::string file, std::string key)
    : std::runtime_error(compose(validUtf8(message), file, key))
    , m_code(code)
    , m_message(validUtf8(message))
    , m_file(std::move(file))
    , m_key(std::move(key))
{
}

std::string Error::compose(const std::string& message, const std::string& file, const std::string& key)
{
    std::string out;
    // Paths and keys come from the file system and from files: repaired like the message, so what() is valid UTF-8.
    if (!file.empty())
        out += validUtf8(file) + ": ";
    if (!key.empty())
        out += "'" + validUtf8(key) + "': ";
    out += message;
    return out;
}

} // namespace attnscope::core
