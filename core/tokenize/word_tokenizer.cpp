// WordTokenizer implementation.
#include "tokenize/word_tokenizer.h"

#include "util/error.h"
#include "util/text_file.h"

#include <sstream>

namespace attnscope::core {

std::unique_ptr<WordTokenizer> WordTokenizer::fromFile(const std::string& vocabTxt)
{
    std::istringstream in(readTextFile(vocabTxt));
    std::vector<std::string> words;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        words.push_back(line);
    }
    if (words.empty())
        throw Error(ErrorCode::CorruptFile, "vocabulary is empty", vocabTxt);
    return std::make_unique<WordTokenizer>(std::move(words), vocabTxt);
}

WordTokenizer::WordTokenizer(std::vector<std::string> words, std::string source)
    : m_words(std::move(words))
    , m_source(std::move(source))
{
    for (std::size_t i = 0; i < m_words.size(); ++i)
        m_ids.emplace(m_words[i], static_cast<std::int32_t>(i)); // first occurrence wins
    if (const auto it = m_ids.find("<unk>"); it != m_ids.end())
        m_unk = it->second;
    if (const auto it = m_ids.find("<eos>"); it != m_ids.end())
        m_eos = it->second;
}

std::vector<Token> WordTokenizer::encode(std::string_view text) const
{
    std::vector<Token> out;
    auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '\n') {
            if (m_eos < 0)
                throw Error(ErrorCode::CorruptFile, "the vocabulary has no <eos> token for line ends", m_source);
            out.push_back({m_eos, "<eos>", i, i + 1});
            ++i;
        } else if (isSpace(c)) {
            ++i;
        } else {
            std::size_t e = i;
            while (e < text.size() && text[e] != '\n' && !isSpace(text[e]))
                ++e;
            const std::string word(text.substr(i, e - i));
            const auto it = m_ids.find(word);
            if (it != m_ids.end()) {
                out.push_back({it->second, word, i, e});
            } else {
                if (m_unk < 0)
                    throw Error(ErrorCode::BadInput,
                                "word \"" + word + "\" is not in the vocabulary, which has no <unk> token", m_source);
                out.push_back({m_unk, word, i, e}); // display the real word; its id is <unk>
            }
            i = e;
        }
    }
    return out;
}

} // namespace attnscope::core
