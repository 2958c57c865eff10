// The one error type the core throws: a code, a human message, and where (file, tensor or key).
#pragma once

#include <stdexcept>
#include <string>

namespace attnscope::core {

enum class ErrorCode {
    Io,              // cannot open / read / map / write a file
    CorruptFile,     // structurally invalid file (truncated, bad header, overlapping ranges, ...)
    BadJson,         // a JSON document that does not parse or has wrong types
    UnsupportedDtype,
    MissingTensor,
    ShapeMismatch,   // a tensor's shape disagrees with the config
    UnknownModelType,
    UnsupportedTokenizer, // a tokenizer kind attnscope does not read (not a broken file)
    BadConfig,       // config.json value missing or out of range
    BadInput,        // user input: empty text, bad options, ids out of range
    Unsafe,          // a file asks for code to run (a pickle's global or call): refused, never executed
    Cancelled,
    OutOfMemory,     // an allocation failed: the request was too large for this machine
    Internal,        // anything else that stopped a request (a bug: the message says what)
};

const char* errorCodeName(ErrorCode code);

class Error : public std::runtime_error {
public:
    // `file` and `key` may be empty; what() combines everything into one readable line.
    Error(ErrorCode code, std::string message, std::string file = {}, std::string key = {});

    ErrorCode code() const noexcept { return m_code; }
    const std::string& message() const noexcept { return m_message; }
    const std::string& file() const noexcept { return m_file; }
    const std::string& key() const noexcept { return m_key; }

private:
    static std::string compose(const std::string& message, const std::string& file, const std::string& key);

    ErrorCode m_code;
    std::string m_message;
    std::string m_file;
    std::string m_key;
};

} // namespace attnscope::core
