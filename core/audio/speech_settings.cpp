// Reading Whisper's generation settings.
#include "audio/speech_settings.h"

#include "model/attention_model.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace attnscope::core {

namespace {

// The decoder's shape: its layers are the stack of the target's sites.
int decoderLayers(const ModelInfo& info)
{
    int layers = 0;
    for (const auto& site : info.sites)
        if (site.kind == SiteKind::Cross)
            ++layers;
    return layers;
}

std::int32_t idAt(const nlohmann::json& j, const char* key, std::int32_t fallback, const ModelInfo& info,
                  const std::string& file)
{
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() >= info.vocabSize)
        throw Error(ErrorCode::BadConfig, "must be a token id below the vocabulary's " + std::to_string(info.vocabSize),
                    file, key);
    return it->get<std::int32_t>();
}

std::vector<std::int32_t> idsAt(const nlohmann::json& j, const char* key, const ModelInfo& info, const std::string& file)
{
    std::vector<std::int32_t> ids;
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return ids;
    if (!it->is_array())
        throw Error(ErrorCode::BadConfig, "must be a list of token ids", file, key);
    for (const auto& v : *it) {
        if (!v.is_number_integer())
            throw Error(ErrorCode::BadConfig, "must be a list of token ids", file, key);
        const auto id = v.get<std::int64_t>();
        if (id >= 0 && id < info.vocabSize) // openai's "-1" stands for the non-speech list, written out by the files
            ids.push_back(static_cast<std::int32_t>(id));
    }
    return ids;
}

std::map<std::string, std::int32_t> tokenMap(const nlohmann::json& j, const char* key, const ModelInfo& info,
                                             const std::string& file)
{
    std::map<std::string, std::int32_t> out;
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return out;
    if (!it->is_object())
        throw Error(ErrorCode::BadConfig, "must map names to token ids", file, key);
    for (const auto& [name, v] : it->items()) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= info.vocabSize)
            throw Error(ErrorCode::BadConfig, "\"" + name + "\" is not a token id of the model", file, key);
        // "<|en|>" is kept as "en": the code a person types.
        std::string code = name;
        if (code.size() > 4 && code.starts_with("<|") && code.ends_with("|>"))
            code = code.substr(2, code.size() - 4);
        out[code] = v.get<std::int32_t>();
    }
    return out;
}

std::vector<DecoderHead> headsAt(const nlohmann::json& j, const ModelInfo& info, const std::string& file)
{
    std::vector<DecoderHead> heads;
    const auto& list = j.at("alignment_heads");
    if (!list.is_array())
        throw Error(ErrorCode::BadConfig, "must be a list of [layer, head] pairs", file, "alignment_heads");
    for (const auto& pair : list) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer())
            throw Error(ErrorCode::BadConfig, "must be a list of [layer, head] pairs", file, "alignment_heads");
        const DecoderHead h{pair[0].get<int>(), pair[1].get<int>()};
        if (h.layer < 0 || h.layer >= decoderLayers(info) || h.head < 0 || h.head >= info.heads)
            throw Error(ErrorCode::BadConfig, "[" + std::to_string(h.layer) + ", " + std::to_string(h.head) +
                                                  "] is not a head of the decoder's " + std::to_string(decoderLayers(info)) +
                                                  " layers of " + std::to_string(info.heads),
                        file, "alignment_heads");
        heads.push_back(h);
    }
    return heads;
}

nlohmann::json jsonOr(const std::string& path)
{
    return std::filesystem::is_regular_file(path) ? readJsonFile(path) : nlohmann::json::object();
}

} // namespace

SpeechSettings readSpeechSettings(const std::string& folder, const ModelInfo& info)
{
    const std::string genPath = (std::filesystem::path(folder) / "generation_config.json").string();
    const std::string cfgPath = (std::filesystem::path(folder) / "config.json").string();
    const nlohmann::json gen = jsonOr(genPath), cfg = jsonOr(cfgPath);
    SpeechSettings s;
    s.source = std::filesystem::is_regular_file(genPath) ? genPath : cfgPath;
    // Each key from the generation config, else from config.json (the 2022-23 checkpoints keep some there).
    auto from = [&](const char* key) -> std::pair<const nlohmann::json&, const std::string&> {
        if (gen.contains(key) && !gen[key].is_null())
            return {gen, genPath};
        return {cfg, cfgPath};
    };
    const auto& target = info.streams.at(static_cast<std::size_t>(info.segmentStream()));
    {
        auto [j, f] = from("decoder_start_token_id");
        s.start = idAt(j, "decoder_start_token_id", target.startToken, info, f);
    }
    {
        auto [j, f] = from("eos_token_id");
        s.end = idAt(j, "eos_token_id", target.endToken, info, f);
    }
    {
        auto [j, f] = from("no_timestamps_token_id");
        s.noTimestamps = idAt(j, "no_timestamps_token_id", -1, info, f);
    }
    s.languages = tokenMap(gen, "lang_to_id", info, genPath);
    s.tasks = tokenMap(gen, "task_to_id", info, genPath);
    s.multilingual = gen.value("is_multilingual", !s.languages.empty()) && !s.languages.empty();
    for (auto [key, out] : {std::pair{"suppress_tokens", &s.suppress}, {"begin_suppress_tokens", &s.suppressAtBegin}}) {
        auto [j, f] = from(key);
        *out = idsAt(j, key, info, f);
    }
    if (auto [j, f] = from("alignment_heads"); j.contains("alignment_heads") && !j["alignment_heads"].is_null()) {
        s.alignmentHeads = headsAt(j, info, f);
        s.alignmentHeadsGiven = true;
    }
    if (s.alignmentHeads.empty()) // openai's default: every head of the decoder's second half
        s.alignmentHeads = parseDecoderHeads("half", s, info);
    return s;
}

std::vector<std::int32_t> speechPrompt(const SpeechSettings& s, const std::string& language, const std::string& task)
{
    std::vector<std::int32_t> prompt{s.start};
    if (s.multilingual) {
        std::string code = language.empty() ? "en" : language;
        if (code.size() > 4 && code.starts_with("<|") && code.ends_with("|>"))
            code = code.substr(2, code.size() - 4);
        const auto lang = s.languages.find(code);
        if (lang == s.languages.end()) {
            std::string known;
            for (const auto& [name, id] : s.languages)
                known += (known.empty() ? "" : ", ") + name;
            throw Error(ErrorCode::BadInput, "the model knows no language \"" + code + "\"; it knows " + known, s.source,
                        "lang_to_id");
        }
        prompt.push_back(lang->second);
        const auto t = s.tasks.find(task.empty() ? "transcribe" : task);
        if (t == s.tasks.end())
            throw Error(ErrorCode::BadInput, "the model has no task \"" + task + "\" (transcribe or translate)", s.source,
                        "task_to_id");
        prompt.push_back(t->second);
    }
    if (s.noTimestamps >= 0)
        prompt.push_back(s.noTimestamps);
    return prompt;
}

std::vector<DecoderHead> parseDecoderHeads(const std::string& text, const SpeechSettings& s, const ModelInfo& info)
{
    const int layers = decoderLayers(info);
    std::vector<DecoderHead> heads;
    if (text.empty())
        return s.alignmentHeads;
    if (text == "all" || text == "half") {
        for (int l = text == "all" ? 0 : layers / 2; l < layers; ++l)
            for (int h = 0; h < info.heads; ++h)
                heads.push_back({l, h});
        return heads;
    }
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        const std::size_t colon = item.find(':');
        try {
            if (colon == std::string::npos)
                throw std::invalid_argument(item);
            const DecoderHead h{std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1))};
            if (h.layer < 0 || h.layer >= layers || h.head < 0 || h.head >= info.heads)
                throw Error(ErrorCode::BadInput, "\"" + item + "\" is not a head of the decoder's " +
                                                     std::to_string(layers) + " layers of " + std::to_string(info.heads) +
                                                     " heads (layer:head, from 0)");
            heads.push_back(h);
        } catch (const std::logic_error&) {
            throw Error(ErrorCode::BadInput, "\"" + item + "\" is not a head: write layer:head, e.g. 3:1,4:0");
        }
        at = comma + 1;
    }
    return heads;
}

} // namespace attnscope::core
