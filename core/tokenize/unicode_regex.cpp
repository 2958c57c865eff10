// UnicodeRegex: Oniguruma (Ruby syntax, as the Rust tokenizers library compiles these patterns) over UTF-32LE.
#include "tokenize/unicode_regex.h"

#include "tokenize/unicode_class.h"
#include "util/error.h"
#include "util/message_text.h"

#include <algorithm>
#include <mutex>
#include <oniguruma.h>

namespace attnscope::core {

namespace {

void initialiseOnce()
{
    static std::once_flag once;
    std::call_once(once, [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF32_LE};
        onig_initialize(encodings, 1);
    });
}

std::string onigMessage(int code, OnigErrorInfo* info = nullptr)
{
    OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
    if (info)
        onig_error_code_to_str(buf, code, info);
    else
        onig_error_code_to_str(buf, code);
    return reinterpret_cast<const char*>(buf);
}

const OnigUChar* bytes(const char32_t* p) { return reinterpret_cast<const OnigUChar*>(p); }

// A match parameter with the retry limit, one per call (Oniguruma keeps per-search state in it).
struct MatchParam {
    OnigMatchParam* p = onig_new_match_param();
    // `textLength`: a whole search's budget grows with the text (32 retries a character, at least 500,000, at most
    // kRetryLimit). Per match alone, a search retries at every start position, and a retry can cost the length of
    // a back-reference: (a+)\1+b over 10 kB of "a" ran for minutes inside the per-match limit.
    explicit MatchParam(std::size_t textLength)
    {
        onig_initialize_match_param(p);
        onig_set_retry_limit_in_match_of_match_param(p, UnicodeRegex::kRetryLimit);
        const unsigned long search = std::clamp<unsigned long>(32ul * textLength, 500'000ul, UnicodeRegex::kRetryLimit);
        onig_set_retry_limit_in_search_of_match_param(p, search);
    }
    ~MatchParam() { onig_free_match_param(p); }
    MatchParam(const MatchParam&) = delete;
    MatchParam& operator=(const MatchParam&) = delete;
};

struct Region {
    OnigRegion* r = onig_region_new();
    ~Region() { onig_region_free(r, 1); }
    Region() = default;
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
};

} // namespace

struct UnicodeRegex::Compiled {
    OnigRegex regex = nullptr;
    ~Compiled()
    {
        if (regex)
            onig_free(regex);
    }
};

UnicodeRegex::UnicodeRegex(std::string_view pattern, std::string file, std::string key)
    : m_pattern(pattern)
    , m_file(std::move(file))
    , m_key(std::move(key))
    , m_compiled(std::make_unique<Compiled>())
{
    if (pattern.size() > kMaxPatternBytes)
        throw Error(ErrorCode::BadJson, "a pre-tokenizer pattern of " + std::to_string(pattern.size()) +
                                            " bytes is longer than any tokenizer's (at most " +
                                            std::to_string(kMaxPatternBytes) + ")", m_file, m_key);
    if (!isValidUtf8(pattern))
        throw Error(ErrorCode::BadJson, "the pre-tokenizer pattern is not valid UTF-8", m_file, m_key);
    initialiseOnce();
    std::u32string wide;
    for (std::size_t at = 0; at < pattern.size();) {
        std::size_t len = 1;
        wide.push_back(decodeUtf8(pattern, at, len));
        at += len;
    }
    OnigErrorInfo info;
    const int r = onig_new(&m_compiled->regex, bytes(wide.data()), bytes(wide.data() + wide.size()), ONIG_OPTION_NONE,
                           ONIG_ENCODING_UTF32_LE, ONIG_SYNTAX_RUBY, &info);
    if (r != ONIG_NORMAL) {
        m_compiled->regex = nullptr;
        const std::string shown = excerpt(m_pattern, 80);
        throw Error(ErrorCode::BadJson, "pre-tokenizer pattern \"" + shown + "\" cannot be compiled: " + onigMessage(r, &info),
                    m_file, m_key);
    }
}

UnicodeRegex::~UnicodeRegex() = default;

int UnicodeRegex::matchAt(const std::u32string& text, int pos) const
{
    MatchParam mp(text.size() - static_cast<std::size_t>(pos));
    const char32_t* s = text.data();
    const int r = onig_match_with_param(m_compiled->regex, bytes(s), bytes(s + text.size()), bytes(s + pos), nullptr,
                                        ONIG_OPTION_NONE, mp.p);
    if (r >= 0)
        return r / static_cast<int>(sizeof(char32_t));
    if (r == ONIG_MISMATCH)
        return -1;
    throw Error(ErrorCode::BadInput, "the pre-tokenizer pattern \"" + excerpt(m_pattern, 80) +
                                         "\" stopped on this text: " + onigMessage(r), m_file, m_key);
}

std::vector<std::pair<int, int>> UnicodeRegex::findAll(const std::u32string& text) const
{
    std::vector<std::pair<int, int>> out;
    MatchParam mp(text.size());
    Region region;
    const char32_t* s = text.data();
    const auto n = static_cast<int>(text.size());
    for (int pos = 0; pos < n;) {
        const int r = onig_search_with_param(m_compiled->regex, bytes(s), bytes(s + n), bytes(s + pos), bytes(s + n),
                                             region.r, ONIG_OPTION_NONE, mp.p);
        if (r == ONIG_MISMATCH)
            break;
        if (r < 0)
            throw Error(ErrorCode::BadInput, "the pre-tokenizer pattern \"" + excerpt(m_pattern, 80) +
                                                 "\" stopped on this text: " + onigMessage(r), m_file, m_key);
        const int begin = region.r->beg[0] / static_cast<int>(sizeof(char32_t));
        const int end = region.r->end[0] / static_cast<int>(sizeof(char32_t));
        if (end > begin) {
            out.emplace_back(begin, end);
            pos = end;
        } else {
            pos = begin + 1; // an empty match: go on from the next character
        }
    }
    return out;
}

} // namespace attnscope::core
