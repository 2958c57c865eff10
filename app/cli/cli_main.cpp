// attnscope-cli: the command-line front end over the core (no Qt). Subcommands: dump, tokenize, predict, generate,
// scan, merge, heads, lens, surprisal, experts, patch and path-patch (cli_patch.cpp), info.
#include "analysis/atlas_recipe.h"
#include "analysis/head_atlas.h"
#include "analysis/image_dump.h"
#include "image/png_reader.h"
#include "analysis/relpos_scan.h"
#include "analysis/scan_recipe.h"
#include "run/text_capture.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/picture_prompt.h"
#include "run/reference_dump.h"
#include "model/seq2seq.h"
#include "tokenize/spm_tokenizer.h"
#include "analysis/logit_lens.h"
#include "analysis/surprisal.h"
#include "analysis/expert_routing.h"
#include "analysis/cross_alignment.h"
#include "analysis/token_predictions.h"
#include "util/atomic_file.h"
#include "tokenize/tokenizer.h"
#include "util/cpu_features.h"
#include "util/memory_info.h"
#include "util/message_text.h"
#include "util/error.h"
#include "util/text_file.h"

#include "builtin_paths.h"
#include "cli_args.h"
#include "cli_patch.h"
#include "cli_head_contexts.h"
#include "cli_sentences.h"
#include "cli_explain.h"
#include "cli_page.h"
#include "cli_attention.h"
#include "cli_speech.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <iostream>
#include <new>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

using namespace attnscope::core;
using namespace attnscope::cli;

namespace {

const char* kUsage = R"(attnscope-cli: attention capture from the command line

  attnscope-cli dump --model MODEL --input INPUT.json [--pixel-values PIXELS.safetensors] --out OUT.safetensors
  attnscope-cli tokenize --tokenizer DIR|FILE (--text TEXT | --text-file FILE) [--special]
                     [--pair TEXT | --pair-file FILE] [--type-ids] [--target]
  attnscope-cli scan --model MODEL --text-file FILE [--mem-len M] [--segment-length T]
                     [--max-tokens N] [--terms a,b,c,d] [--shard I/N] [--same-length 0|1] [--clamp-len C]
                     --out RESULT.safetensors
  attnscope-cli merge A.safetensors B.safetensors ... --out RESULT.safetensors
  attnscope-cli heads RESULT.safetensors [--format text|csv|json] [--sort width|sink|COLUMN] [--top N]
                     [--profile full|term_a|band_1|...] [--model MODEL [--text-file FILE]]
  attnscope-cli heads --model MODEL --text-file FILE [--format ...] [--sort COLUMN] [--top N]
  attnscope-cli predict --model MODEL (--text TEXT | --text-file FILE) [--position I] [--top K] [--pair TEXT]
  attnscope-cli generate --model MODEL (--text TEXT | --text-file FILE) --max-new-tokens N
                     [--temperature T] [--top-k K] [--top-p P] [--seed S] [--allow-special]
  attnscope-cli generate --model VISION-LANGUAGE (--image PICTURE.png --text PROMPT | --input INPUT.json)
                     --max-new-tokens N [--temperature T] [--seed S]
  attnscope-cli generate --model ENCODER-DECODER --source TEXT [--text TARGET-START] [--max-new-tokens N]
                     [--temperature T] [--seed S]
  attnscope-cli predict --model ENCODER-DECODER --source TEXT [--text TARGET-SO-FAR] [--top K]
  attnscope-cli generate --model SPEECH (--audio FILE.wav | --features F.safetensors) [--max-new-tokens N]
                     [--language en] [--task transcribe|translate] [--temperature T] [--seed S]
  attnscope-cli align --model SPEECH (--audio FILE.wav | --features F.safetensors) (--ids "ID ..." | --text TEXT)
                     [--heads L:H,L:H|all] [--language en] --out ALIGN.json
  attnscope-cli features --audio FILE.wav [--n-mels 80 | --model SPEECH] --out FEATURES.safetensors
  attnscope-cli lens --model MODEL (--text TEXT | --text-file FILE) --out LENS.csv
  attnscope-cli surprisal --model MODEL (--text TEXT | --text-file FILE)
  attnscope-cli experts --model MODEL (--text TEXT | --text-file FILE) [--chunk N] [--top N] [--per-token]
  attnscope-cli patch --model MODEL (--clean TEXT | --clean-ids "ID ...") (--corrupt TEXT | --corrupt-ids "ID ...")
                     --answer ID|WORD --wrong ID|WORD [--metric logit-diff|prob|logprob|loss]
                     --component head-out|q|k|v|pattern|resid [--per-position] [--noising] [--coarse-to-fine S]
                     --out PATCH.json
  attnscope-cli path-patch --model MODEL (--clean ...) (--corrupt ...) --answer ID|WORD --wrong ID|WORD
                     --sender L.H --receivers L.X[,L.X...] --input q|k|v [--receiver-head-only] [--freeze-mlps]
                     [--noising] --out PATH.json
  attnscope-cli head-contexts --model MODEL (--text TEXT | --text-file FILE) --out DIR
                     [--stat max-away|output-norm|prev-token|induction] [--window T] [--top K] [--per-decile S]
                     [--max-tokens N] [--ablation-tokens A] [--shard I/N (--out SHARD.safetensors) | --shards FOLDER]
  attnscope-cli sentences --model MODEL (--text TEXT | --text-file FILE) [--proximity N] --out SENTENCES.json
  attnscope-cli explain --model MODEL --input INPUT.json --layer L --head H --position P --out STEP.json
  attnscope-cli attention --model MODEL (--text TEXT | --text-file FILE | --ids "ID ...") --layer L [--head H]
                     [--segment S] [--raw] --out LAYER.npy
                     (one layer's [heads, queries, keys] float32, as Python's Capture.attention; layers from 1)
  attnscope-cli page --model MODEL (--text TEXT | --text-file FILE | --ids "ID ...") [--layers 1,2] [--heads 1,3]
                     --out PAGE.html
                     (an encoder-decoder model: --source TEXT or --ids, translated, or read with the target --text;
                     a vision model: --image FILE.png)
  attnscope-cli info --model MODEL
  attnscope-cli list-builtin
  attnscope-cli --version      (also names the instruction set of the compute library in use)

MODEL is a model folder (Hugging Face layout: safetensors or PyTorch .bin weights), its config.json, a .gguf file,
a PyTorch checkpoint (.bin, .pt, .pth; read without running any code) with config.json beside it, or builtin:NAME.
A tokenizer is a folder (tokenizer.json, tokenizer.model, vocab.json + merges.txt, vocab.txt, or Transformer-XL's
vocab.pkl), one of those
files, or a .gguf file (its own vocabulary); a folder's config.json says whether its vocab.txt is BERT's WordPiece
vocabulary or a word list. tokenize prints the ids without special tokens; --special adds what the tokenizer adds by
default (Llama's BOS, BERT's [CLS] ... [SEP]). --pair encodes a text pair through the pair template ([CLS] A [SEP]
B [SEP]; with --special its special tokens, else A's ids then B's); --type-ids prints the token type ids instead.

predict: a causal model's top K next tokens (default 10) after token I (1-based, default the last) as JSON
[{"id", "token", "p"}]; an encoder's top K fillers of every [MASK] / <mask> as [{"position", "predictions"}].
generate: N new tokens through the key/value cache, greedy unless --temperature is given (then sampled within top-k
and top-p, seeded), as JSON {"ids", "tokens", "p"}; control tokens (<unk>, <eos>, [SEP], ...) only with --allow-special. lens: the logit lens of every segment as CSV
(layer,position,id,token,p of each layer's top token, then the next token's id, text, p and rank).
Encoder-decoder models (T5, BART, Marian) read a source and write a target. generate --source translates it (greedy
unless --temperature), continuing --text when given, as JSON {"source", "ids", "tokens", "text", "finished",
"alignment"}: for each written token the source token its last decoder layer's cross-attention weighs most (mean over
heads). predict --source gives the top K next target tokens after --text. dump takes input.json's "input_ids" and
"decoder_input_ids" and names every site's tensors as the reference data does (encoder.layer{l}.attn_prob,
decoder.layer{l}.self_attn_prob / cross_attn_prob, ...). tokenize --target reads with a Marian model's target.spm.
Speech models (Whisper) listen to a recording (WAV, FLAC, OGG; down-mixed and resampled to 16 kHz by libsoxr's
high-quality filter; the first 30 s). generate --audio transcribes it greedily from <|startoftranscript|>, the language
(default en), the task and <|notimestamps|>, never writing the generation config's suppress_tokens (nor its
begin_suppress_tokens first), as JSON {"prompt_ids", "ids", "sequences", "tokens", "text", ...}. align times the
words of a transcript (--ids: the decoder input from the start token, or the text tokens alone; --text: tokenized)
by OpenAI's recipe over the alignment heads (generation_config.json's, or --heads): {"words": [{"word", "start",
"end", "probability"}], "jump_times", "path", "token_timestamps" (Hugging Face's, v4.48 and v4.54+), "head_ranking"
(every head's own path against the chosen heads', best first)}. features writes the log-mel input_features and
num_frames. dump takes input.json's "audio" (or "input_features") and "decoder_input_ids".
experts (mixture-of-experts models): each expert's load per layer over the text (the share of tokens routed to it,
their mean router weight) and the tokens it takes most, as JSON; --per-token instead prints every token's chosen
experts and weights per layer.
surprisal: each token's surprisal under a causal model (-log2 p of it given the tokens before; null for the first)
and the text's perplexity, as JSON {"perplexity", "mean_bits", "predicted_tokens", "tokens": [{"id", "token", "bits"}]}.
patch: activation patching (decoders). Two prompts of the same length in tokens; the metric at the last position
(default logit[answer] - logit[wrong]; answers as ids or one-token words); each layer's heads (key/value groups for
k and v of a grouped model; positions for resid, layers 1..L+1 where L+1 is after the last layer) patched one at a
time from the clean run into the corrupted one (--noising: the other way). Writes {"m_clean", "m_corrupt", "scores"}
with scores[layer][head or group or position][position with --per-position], each (m_patched - m_corrupt) /
(m_clean - m_corrupt), every index from 1 in "axes". pattern patches a head's probabilities, keeping the values.
--coarse-to-fine S: first each layer with all its heads (or groups) patched at once ("layer_scores"), then the heads of
the layers whose |score| >= S only, then (with --per-position) the positions of the heads that reach S ("unit_scores");
cells left out are null, counted in "skipped" (a head another head of its layer cancels can be missed).
path-patch: the sender head's output from the other prompt, every other head frozen, reaches only the receivers'
q, k or v (X a query head for q; a key/value group for k and v of a grouped model, or with --receiver-head-only one
query head); writes {"m_clean", "m_corrupt", "score"}. The MLPs between sender and receivers are recomputed (Wang et
al.: the sender reaches the receivers directly and through the MLPs); --freeze-mlps freezes them too, the strict direct
path (only the sender's own write to the stream reaches the receivers).
head-contexts: every head over a text in windows of T tokens (default 64): a statistic per query position (the largest
weight away from the first token, the head's output norm, its previous-token or induction weight), each head's top K
contexts and S from every tenth of the statistic's range with the head's attention there, and a scatter of all heads'
metrics (with --ablation-tokens A, also each head's ablation effect: the next-token loss's change over the first A
tokens when its output is zeroed, one run per head); DIR/index.json, DIR/scatter.json, DIR/heads/L{l}-H{h}.json (docs/file-formats.md).
On a cluster (tools/slurm/head-contexts-*.sbatch): --shard I/N runs the first pass over the I-th of N parts of the
windows into SHARD.safetensors; then --shards FOLDER (the same text and options) merges them, picks the contexts and
runs the second pass on their windows only: the same files as one run.
explain: how head H of layer L computes the attention of the query at position P (all from 1) of a reference-style
input.json: {"scores" (scaled, capped logits; null where masked), "sink" (gpt-oss), "probs" (the softmax: the grid's
row), "query", "keys", "head_output", "key_positions", "scale", "kv_head"}.
page: a self-contained interactive HTML page (the grid, a head and layer selector, the text shaded by the attention
of the token under the pointer; nothing fetched) of the chosen layers and heads (default all).
sentences: the text by sentences in one segment: {"sentences": [[tokens]], "heads": [{"layer", "head",
"receiver_kurtosis", "attention": sentence x sentence}], "suppression_kl": [suppressed][later] (decoders)}.

scan: Transformer-XL runs segments of T tokens with a memory of M (defaults: the model's). GPT-2 and Llama-family
models run chunks of T tokens (default: the context, at most 1024), each from an empty cache (--mem-len 0, the
default); rotary models may carry a cache of the last M tokens from chunk to chunk (--mem-len M, sliding window).
heads prints the head atlas of a scan: query entropy, attended distance, previous-token score, sink rate (queries
from a chunk's second token on putting more than 0.3 on its first key), first-key mass, profile entropy and span;
with --model also each head's induction score (a repeated random sequence), with --text-file its duplicate-token
score on that text and Clark et al.'s statistics (attention to [CLS], [SEP], punctuation, the previous and the next
token, row entropy). Sorted by profile entropy (width), sink rate (sink) or any column's CSV name. Without a scan
file (encoders have no distance profiles) only the text's columns, sorted by row entropy unless --sort says.
)";

// The picture input.json names (beside it), read (PNG) and preprocessed as the model folder's
// preprocessor_config.json says.
PixelValues imageInput(const LoadedModel& loaded, const nlohmann::json& input, const std::string& inputPath)
{
    const auto it = input.find("image");
    if (it == input.end() || !it->is_string())
        throw Error(ErrorCode::BadInput, "names no \"image\" (or give --pixel-values FILE)", inputPath, "image");
    const auto path = std::filesystem::path(inputPath).parent_path() / it->get<std::string>();
    return preprocessImage(readPng(path.string()), readPreprocessor(loaded.folder));
}

int cmdDump(const Args& a, const std::vector<std::string>& builtins)
{
    const auto& inputPath = require(a, "input");
    const auto& outPath = require(a, "out");
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto input = readJsonFile(inputPath);
    std::vector<OutputTensor> tensors;
    if (loaded.model->info().can.image) // pixel values given, or the image input.json names, preprocessed
        tensors = dumpImage(*loaded.model, std::make_shared<const PixelValues>(
                                               a.options.count("pixel-values") ? readPixelValues(a.options.at("pixel-values"))
                                                                               : imageInput(loaded, input, inputPath)));
    else
        tensors = dumpReference(*loaded.model, input, inputPath);
    writeSafetensors(outPath, tensors, {{"source", "attnscope-cli dump"}, {"model", loaded.model->info().source}});
    std::cerr << "wrote " << tensors.size() << " tensors to " << outPath << "\n";
    return 0;
}

int cmdTokenize(const Args& a, const std::vector<std::string>& builtins)
{
    // A tokenizer folder needs no config.json; only builtin:NAME goes through model resolution.
    const std::string& spec = require(a, "tokenizer");
    const std::string folder = isBuiltinSpec(spec) ? resolveModelFolder(spec, builtins) : spec;
    std::string text;
    if (a.options.count("text") && a.options.count("text-file"))
        throw Error(ErrorCode::BadInput, "give either --text or --text-file, not both");
    if (a.options.count("text"))
        text = a.options.at("text");
    else if (a.options.count("text-file"))
        text = readTextFile(a.options.at("text-file"));
    else
        throw Error(ErrorCode::BadInput, "tokenize needs --text or --text-file");
    if (a.options.count("pair") && a.options.count("pair-file"))
        throw Error(ErrorCode::BadInput, "give either --pair or --pair-file, not both");
    std::optional<std::string> pair;
    if (a.options.count("pair"))
        pair = a.options.at("pair");
    else if (a.options.count("pair-file"))
        pair = readTextFile(a.options.at("pair-file"));
    std::unique_ptr<Tokenizer> tok;
    if (a.options.count("target") && !(tok = marianTokenizer(folder, true)))
        throw Error(ErrorCode::BadInput, "--target reads a Marian folder's target.spm (with source.spm and vocab.json); "
                                         "this tokenizer has one side",
                    folder);
    if (!tok)
        tok = loadFolderTokenizer(folder);
    const bool special = a.options.count("special") != 0;
    PairEncoding enc;
    if (pair && special) {
        enc = tok->encodePairWithSpecial(text, *pair, text.size());
    } else {
        enc.tokens = special ? tok->encodeWithSpecial(text) : tok->encode(text);
        enc.typeIds.assign(enc.tokens.size(), 0);
        if (pair)
            for (auto& t : tok->encode(*pair)) {
                enc.tokens.push_back(std::move(t));
                enc.typeIds.push_back(1);
            }
    }
    nlohmann::json out = nlohmann::json::array();
    if (a.options.count("type-ids"))
        out = enc.typeIds;
    else
        for (const auto& t : enc.tokens)
            out.push_back(t.id);
    std::cout << out.dump() << "\n";
    return 0;
}

// A progress bar on stderr, redrawn at most ten times a second. When stderr is a file (a batch job's log), one line
// per tenth of the work instead, so a day-long scan leaves a short log that still says how far it got.
class ProgressBar {
public:
    void update(std::int64_t done, std::int64_t total)
    {
        const auto now = std::chrono::steady_clock::now();
        const double frac = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0;
        if (m_toLog) {
            const int tenth = static_cast<int>(frac * 10);
            if (tenth <= m_lastTenth)
                return;
            m_lastTenth = tenth;
        } else if (done < total && now - m_last < std::chrono::milliseconds(100)) {
            return;
        }
        m_last = now;
        const double secs = std::chrono::duration<double>(now - m_start).count();
        const int width = 30, filled = static_cast<int>(frac * width);
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
        const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
        std::fprintf(stderr, "%s[%s%s] %3.0f%% %lld/%lld tokens, %.0f tokens/s, %.0f s left%s", m_toLog ? "" : "\r",
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(width - filled), '.').c_str(), 100 * frac,
                     static_cast<long long>(done), static_cast<long long>(total), rate, std::max(0.0, eta),
                     m_toLog ? "\n" : "   ");
        std::fflush(stderr);
    }
    void finish()
    {
        if (!m_toLog)
            std::fprintf(stderr, "\n");
    }

private:
    bool m_toLog = !::isatty(2);
    int m_lastTenth = 0;
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now(), m_last{};
};

int cmdScan(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& textFile = require(a, "text-file");
    nonEmptyTextFile(textFile); // an empty corpus is named now, not found to tokenize to nothing after the model loads
    const auto& out = require(a, "out");
    ScanChoices choices;
    if (a.options.count("mem-len"))
        choices.memLen = parseInt(a, "mem-len", -1);
    if (a.options.count("segment-length"))
        choices.segmentLen = parseInt(a, "segment-length", -1);
    choices.maxTokens = parseInt(a, "max-tokens", -1);
    if (a.options.count("same-length"))
        choices.sameLength = parseInt(a, "same-length", 0) != 0;
    if (a.options.count("clamp-len"))
        choices.clampLen = parseInt(a, "clamp-len", -1);
    choices.terms = a.options.count("terms") ? a.options.at("terms") : "";
    const auto [shardI, shardN] = parseShard(a);
    // Checked before the tokenizer loads: a wrong option is the first thing to hear about.
    ScanOptions opt = scanOptionsFor(loaded.model->info(), choices);
    const auto tokenizer = loadModelTokenizer(loaded);
    ProgressBar bar;
    opt.progress = [&bar](std::int64_t done, std::int64_t total) { bar.update(done, total); };
    auto result = scanTextFile(*loaded.model, *tokenizer, textFile, opt, shardI, shardN);
    bar.finish();
    result.save(out);
    std::fprintf(stderr, "scanned %lld tokens; wrote %s\n", static_cast<long long>(result.tokens), out.c_str());
    return 0;
}

int cmdMerge(int argc, char** argv)
{
    std::vector<std::string> inputs;
    std::string out;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--out") {
            if (i + 1 >= argc)
                throw Error(ErrorCode::BadInput, "--out needs a value");
            out = argv[++i];
        } else if (arg.rfind("--", 0) == 0) {
            throw Error(ErrorCode::BadInput, "unknown option " + arg + " for merge");
        } else {
            inputs.push_back(arg);
        }
    }
    if (out.empty())
        throw Error(ErrorCode::BadInput, "merge needs --out");
    if (inputs.empty())
        throw Error(ErrorCode::BadInput, "merge needs at least one scan result");
    const ScanResult merged = mergeScanFiles(inputs); // shards: all N of one corpus, each once
    merged.save(out);
    std::fprintf(stderr, "merged %zu results (%lld tokens); wrote %s\n", inputs.size(),
                 static_cast<long long>(merged.tokens), out.c_str());
    return 0;
}

int cmdHeads(int argc, char** argv, const std::vector<std::string>& builtins)
{
    // A scan result file first; without one (an encoder, which has no distance profiles), --model and --text-file.
    const bool hasScan = argc >= 3 && std::string(argv[2]).rfind("--", 0) != 0;
    std::string profile = "full", sort = "width", format = "text", model, textFile;
    int top = -1;
    for (int i = hasScan ? 3 : 2; i < argc; i += 2) {
        const std::string k = argv[i];
        if (i + 1 >= argc)
            throw Error(ErrorCode::BadInput, k + " needs a value");
        const std::string v = argv[i + 1];
        if (k == "--profile")
            profile = v;
        else if (k == "--top")
            top = std::atoi(v.c_str());
        else if (k == "--sort")
            sort = v;
        else if (k == "--format")
            format = v;
        else if (k == "--model")
            model = v;
        else if (k == "--text-file")
            textFile = v;
        else
            throw Error(ErrorCode::BadInput, "unknown option " + k + " for heads");
    }
    if (format != "text" && format != "csv" && format != "json")
        throw Error(ErrorCode::BadInput, "--format must be text, csv or json, got \"" + format + "\"");
    if (!textFile.empty() && model.empty())
        throw Error(ErrorCode::BadInput, "--text-file needs --model (the duplicate-token score runs the model on the text)");
    if (!hasScan && (model.empty() || textFile.empty()))
        throw Error(ErrorCode::BadInput, "heads needs a scan result file, or --model and --text-file (the text's columns only)");
    const auto& cols = atlasColumns();
    std::size_t sortColumn = 5; // width: profile entropy
    if (sort == "sink")
        sortColumn = 3;
    else if (sort != "width") {
        sortColumn = cols.size();
        for (std::size_t c = 0; c < cols.size(); ++c)
            if (sort == cols[c].key)
                sortColumn = c;
        if (sortColumn == cols.size()) {
            std::string keys = "width, sink";
            for (const auto& c : cols)
                keys += std::string(", ") + c.key;
            throw Error(ErrorCode::BadInput, "--sort takes one of " + keys + "; got \"" + sort + "\"");
        }
    }
    // The one recipe (analysis/atlas_recipe.h): profile columns from the scan file (or, for a causal model, the
    // text), the text's columns, the model's induction scores.
    AtlasRecipe recipe;
    std::string header; // what the table was computed from
    if (hasScan) {
        auto r = std::make_shared<ScanResult>(ScanResult::load(argv[2]));
        const std::string mode = r->metadata.count("mode") ? r->metadata.at("mode") + ", " : std::string();
        header = profile + ", " + mode + std::to_string(r->tokens) + " tokens" + (r->partial ? ", partial" : "");
        if (sort == "sink" && !r->hasSinks())
            throw Error(ErrorCode::BadInput, "this scan result has no attention-sink counts (it predates them): scan again",
                        argv[2]);
        recipe.profile = std::move(r);
        recipe.profileName = profile;
    } else {
        header = "text " + textFile;
    }
    HeadAtlas atlas;
    if (model.empty()) {
        atlas = atlasFromScan(*recipe.profile, profile);
    } else {
        const auto loaded = loadModel(model, builtins);
        if (recipe.profile && (loaded.model->info().layers != recipe.profile->layers ||
                               loaded.model->info().heads != recipe.profile->heads))
            throw Error(ErrorCode::BadInput, "the model's layers x heads differ from the scan's", model);
        std::unique_ptr<Tokenizer> tokenizer;
        try {
            tokenizer = loadModelTokenizer(loaded);
        } catch (const Error&) {
            if (!textFile.empty())
                throw;
        }
        std::shared_ptr<const TextCapture> capture;
        if (!textFile.empty())
            capture = captureText(*loaded.model, *tokenizer, nonEmptyTextFile(textFile), {});
        recipe.capture = capture.get();
        recipe.tokenizer = tokenizer.get();
        atlas = atlasOfText(*loaded.model, recipe).atlas;
    }
    if (!atlas.hasScan && sort == "width")
        sortColumn = 14; // no profiles (an encoder's text): the text's row entropy
    // Largest first; unknown values last.
    std::vector<std::size_t> order(atlas.rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const double x = atlasValue(atlas.rows[a], sortColumn), y = atlasValue(atlas.rows[b], sortColumn);
        if (std::isnan(x) || std::isnan(y))
            return !std::isnan(x) && std::isnan(y);
        return x > y;
    });
    if (top >= 0 && static_cast<std::size_t>(top) < order.size())
        order.resize(static_cast<std::size_t>(top));
    if (format == "text") {
        std::printf("# %s; sorted by %s\n", header.c_str(), sortColumn < cols.size() ? cols[sortColumn].title : "");
    }
    const std::string table = formatAtlas(atlas, format == "csv" ? TableFormat::Csv : format == "json" ? TableFormat::Json
                                                                                                         : TableFormat::Text,
                                          order);
    std::fwrite(table.data(), 1, table.size(), stdout);
    return 0;
}

// The tokens a text (or a pair) gives the model, with their types.
PairEncoding encodeForModel(const Tokenizer& tok, const std::string& text, const std::optional<std::string>& pair)
{
    if (pair)
        return tok.encodePairWithSpecial(text, *pair, text.size());
    PairEncoding e;
    e.tokens = tok.encodeWithSpecial(text);
    e.typeIds.assign(e.tokens.size(), 0);
    return e;
}

nlohmann::ordered_json predictionJson(const Tokenizer& tok, const TokenPrediction& p)
{
    return {{"id", p.id}, {"token", tok.pieceOf(p.id)}, {"p", p.probability}};
}

// The model's input as the command line gives it: the segment stream's tokens (--text or --text-file, with --pair an
// encoder's sentence pair; an encoder-decoder model's target from its decoder start, where --text may be absent) and
// the run's options (token types; --source for a model that reads one, refused by name for others).
struct CliInput {
    std::vector<Token> tokens;
    RunOptions options;
    std::vector<Token> source; // the source's tokens as the model reads them; empty for one stream
};
// A vision-language model's picture and prompt: input.json's (--input: its picture and ids), or --image with --text
// (a prompt without the placeholder gets one where the text starts, after a BOS). The placeholders are expanded to
// the picture's image tokens.
CliInput pictureInput(const Args& a, const LoadedModel& loaded, const Tokenizer& tok)
{
    const ModelInfo& info = loaded.model->info();
    if (info.pictureToken < 0)
        throw Error(ErrorCode::BadInput, std::string(a.options.count("image") ? "--image" : "--input") +
                                             " is for vision-language models; this one reads text");
    PicturePrompt prompt;
    if (a.options.count("input")) {
        const auto& path = a.options.at("input");
        prompt = picturePromptOf(*loaded.model, loaded.folder, readJsonFile(path), path);
    } else {
        prompt = picturePromptOfText(*loaded.model, tok, loaded.folder, {a.options.at("image")}, textArgument(a));
    }
    CliInput in;
    in.tokens = pictureTokens(*loaded.model, prompt, &tok);
    in.options = prompt.runOptions();
    return in;
}

CliInput cliInput(const Args& a, const LoadedModel& loaded, const Tokenizer& tok, const Tokenizer& targetTok)
{
    const ModelInfo& info = loaded.model->info();
    if (a.options.count("image") || a.options.count("input"))
        return pictureInput(a, loaded, tok);
    CliInput in;
    const int read = info.typedReadStream();
    if (read < 0) {
        if (a.options.count("source"))
            throw Error(ErrorCode::BadInput, "--source is for encoder-decoder models; this model continues --text");
        std::optional<std::string> pair;
        if (a.options.count("pair"))
            pair = a.options.at("pair");
        auto enc = encodeForModel(tok, textArgument(a), pair);
        in.tokens = std::move(enc.tokens);
        in.options.tokenTypes = std::move(enc.typeIds);
        return in;
    }
    if (!a.options.count("source"))
        throw Error(ErrorCode::BadInput, a.command + " of an encoder-decoder model needs --source (the text to translate)");
    in.source = streamTokens(info, read, tok, a.options.at("source"));
    in.options.source = std::make_shared<const std::vector<std::int32_t>>(idsOf(in.source));
    const bool typed = a.options.count("text") || a.options.count("text-file");
    in.tokens = streamTokens(info, info.segmentStream(), targetTok, typed ? textArgument(a) : std::string());
    return in;
}

// The token a model's segment stream ends with when it writes it (an encoder-decoder model's </s>), or -1.
std::int32_t endToken(const ModelInfo& info)
{
    return info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
}

// Each written token's most-read source token: the last decoder layer's cross-attention, the mean of its heads, in a
// capture of the whole target (row i - 1 wrote token i).
nlohmann::ordered_json alignmentOf(const AttentionModel& model, const CliInput& in, const std::vector<std::int32_t>& target,
                                   std::size_t firstWritten, const Tokenizer& targetTok)
{
    const ModelInfo& info = model.info();
    int cross = -1;
    for (int s = 0; s < info.siteCount(); ++s)
        if (info.site(s).kind == SiteKind::Cross)
            cross = s;
    nlohmann::ordered_json alignment = nlohmann::json::array();
    if (cross < 0 || target.size() <= firstWritten)
        return alignment;
    CaptureOptions options;
    options.run.source = in.options.source;
    std::vector<Token> tokens;
    for (const auto id : target)
        tokens.push_back(Token{id, targetTok.pieceOf(id), 0, 0});
    const auto capture = captureText(model, std::move(tokens), options);
    const auto grid = attentionGrid(*capture, 0, cross, {});
    const auto strongest = strongestColumns(grid);
    for (std::size_t i = firstWritten; i < target.size(); ++i) {
        const int row = static_cast<int>(i) - 1, best = strongest[static_cast<std::size_t>(row)];
        alignment.push_back({{"token", targetTok.pieceOf(target[i])}, {"source_position", best + 1},
                             {"source_token", in.source[static_cast<std::size_t>(best)].text},
                             {"weight", grid.at(row, best)}});
    }
    return alignment;
}

// predict on a causal model or an encoder-decoder model's target: the next token after --position (1-based; default
// the last).
int predictNext(const Args& a, const LoadedModel& loaded, const CliInput& in, const Tokenizer& targetTok, int k)
{
    std::vector<std::int32_t> ids = idsOf(in.tokens);
    const int position = parseInt(a, "position", static_cast<int>(ids.size()));
    if (position < 1 || position > static_cast<int>(ids.size()))
        throw Error(ErrorCode::BadInput, "--position must be from 1 to " + std::to_string(ids.size()) +
                                             " (the text's tokens)");
    const int at = position - 1;
    const auto top = topPredictions(*loaded.model, std::span<const std::int32_t>(ids).first(static_cast<std::size_t>(position)),
                                    in.options, std::vector<int>{at}, k);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& pr : top.front())
        out.push_back(predictionJson(targetTok, pr));
    std::cout << out.dump(2) << "\n";
    return 0;
}

int cmdPredict(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    const auto targetTok = loadModelTargetTokenizer(loaded);
    const int k = parseInt(a, "top", 10);
    if (k < 1 || k > 1000)
        throw Error(ErrorCode::BadInput, "--top must be from 1 to 1000");
    const CliInput in = cliInput(a, loaded, *tok, *targetTok);
    if (!loaded.model->info().can.maskedTokens)
        return predictNext(a, loaded, in, *targetTok, k);
    // An encoder: the fillers of every [MASK] / <mask>, each with its position (1-based).
    std::vector<int> positions;
    for (std::size_t t = 0; t < in.tokens.size(); ++t)
        if (isMaskToken(in.tokens[t]))
            positions.push_back(static_cast<int>(t));
    if (positions.empty())
        throw Error(ErrorCode::BadInput, "the text has no [MASK] (or <mask>) token to fill");
    const auto top = topPredictions(*loaded.model, idsOf(in.tokens), in.options, positions, k);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (std::size_t p = 0; p < positions.size(); ++p) {
        nlohmann::ordered_json fills = nlohmann::ordered_json::array();
        for (const auto& pr : top[p])
            fills.push_back(predictionJson(*tok, pr));
        out.push_back({{"position", positions[p] + 1}, {"predictions", fills}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
}

// How generate samples: greedy unless a temperature is given; control tokens (<unk>, <eos>, ...) only when asked for,
// but the stream's end token always (it ends a translation).
Sampling samplingOf(const Args& a, const Tokenizer& tok, std::int32_t end)
{
    Sampling sampling;
    if (a.options.count("temperature")) {
        sampling.greedy = false;
        sampling.temperature = parseDouble(a, "temperature", 1.0);
    }
    if (!a.has("allow-special"))
        for (const auto id : controlTokenIds(tok))
            if (id != end)
                sampling.excluded.push_back(id);
    sampling.topK = parseInt(a, "top-k", 0);
    sampling.topP = parseDouble(a, "top-p", 1.0);
    checkSampling(sampling, {"--temperature", "--top-k", "--top-p"});
    return sampling;
}

int cmdGenerate(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& info = loaded.model->info();
    if (a.has("audio") || a.has("features") || info.can.audio)
        return generateSpeech(a, loaded);
    const auto tok = loadModelTokenizer(loaded);
    const auto targetTok = loadModelTargetTokenizer(loaded);
    const CliInput in = cliInput(a, loaded, *tok, *targetTok);
    const bool translates = !in.source.empty();
    const int count = parseInt(a, "max-new-tokens", translates ? 64 : -1);
    if (count < 1 || count > 100'000)
        throw Error(ErrorCode::BadInput, "generate needs --max-new-tokens from 1 to 100000");
    const auto seed = static_cast<std::uint64_t>(parseInt(a, "seed", 1234));
    GenerationRun run{in.options, nullptr, endToken(info)};
    const std::vector<std::int32_t> prompt = idsOf(in.tokens);
    const auto g = generateTokens(*loaded.model, prompt, count, samplingOf(a, *targetTok, run.stopAt), seed, nullptr, run);
    nlohmann::ordered_json out;
    nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
    for (const auto id : g.ids)
        tokens.push_back(targetTok->pieceOf(id));
    if (translates) {
        nlohmann::ordered_json src = nlohmann::json::array();
        for (const auto& s : in.source)
            src.push_back(s.text);
        out["source"] = src;
    }
    out["ids"] = g.ids;
    out["tokens"] = tokens;
    out["p"] = g.probabilities;
    if (translates) {
        std::string text;
        for (std::size_t i = 0; i < g.ids.size(); ++i)
            if (!(g.finished && i + 1 == g.ids.size()))
                text += targetTok->textOf(g.ids[i]);
        const auto first = text.find_first_not_of(' ');
        out["text"] = first == std::string::npos ? std::string() : bytesSpelled(text.substr(first));
        out["finished"] = g.finished;
        std::vector<std::int32_t> target = prompt;
        target.insert(target.end(), g.ids.begin(), g.ids.end());
        out["alignment"] = alignmentOf(*loaded.model, in, target, prompt.size(), *targetTok);
    }
    std::cout << out.dump(translates ? 2 : -1) << "\n";
    return 0;
}

int cmdLens(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    const auto capture = captureText(*loaded.model, *tok, textArgument(a), {});
    std::string table;
    for (int s = 0; s < static_cast<int>(capture->segments.size()); ++s) {
        const std::string part = logitLensCsv(logitLens(*loaded.model, *capture, s), *capture, *tok);
        table += s == 0 ? part : part.substr(part.find('\n') + 1); // one header
    }
    const std::string& out = require(a, "out");
    writeFileAtomically(out, table);
    std::cerr << "wrote the logit lens of " << capture->tokens.size() << " tokens to " << out << "\n";
    return 0;
}

int cmdSurprisal(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    const auto capture = captureText(*loaded.model, *tok, textArgument(a), {});
    const auto s = tokenSurprisal(*loaded.model, *capture);
    nlohmann::ordered_json j;
    j["perplexity"] = s.perplexity;
    j["mean_bits"] = s.meanNats / std::log(2.0);
    j["predicted_tokens"] = s.predicted;
    auto& tokens = j["tokens"] = nlohmann::json::array();
    for (std::size_t i = 0; i < capture->tokens.size(); ++i) {
        nlohmann::ordered_json t;
        t["id"] = capture->tokens[i].id;
        t["token"] = capture->tokens[i].text;
        t["bits"] = std::isnan(s.bits[i]) ? nlohmann::json(nullptr) : nlohmann::json(s.bits[i]);
        tokens.push_back(t);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
}

int cmdExperts(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    if (!loaded.model->info().can.experts)
        throw Error(ErrorCode::BadInput, std::string(familyName(loaded.model->info().family)) +
                                             " has no mixture-of-experts layers: no router to show");
    std::vector<std::int32_t> ids;
    const std::string text = textArgument(a);
    const auto tokens = tok->encodeWithSpecial(text);
    ids = idsOf(tokens);
    const int chunk = parseInt(a, "chunk", std::min(1024, loaded.model->info().maxSegmentLen));
    if (a.options.count("per-token")) {
        const auto capture = captureText(*loaded.model, *tok, text, {});
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (int s = 0; s < static_cast<int>(capture->segments.size()); ++s) {
            const auto r = textRouting(*loaded.model, *capture, s);
            for (int t = 0; t < r.tokens; ++t) {
                nlohmann::ordered_json tokenJson;
                tokenJson["position"] = r.firstPosition + t + 1;
                tokenJson["token"] = capture->tokens[static_cast<std::size_t>(r.firstPosition + t)].text;
                nlohmann::json layers = nlohmann::json::array();
                for (int l = 0; l < r.layers; ++l) {
                    nlohmann::json chosen = nlohmann::json::array();
                    for (int k = 0; k < r.used; ++k)
                        chosen.push_back({{"expert", r.ids[static_cast<std::size_t>(l)][static_cast<std::size_t>(t) * r.used + k] + 1},
                                          {"weight", r.weights[static_cast<std::size_t>(l)][static_cast<std::size_t>(t) * r.used + k]}});
                    layers.push_back(chosen);
                }
                tokenJson["layers"] = layers;
                out.push_back(tokenJson);
            }
        }
        std::cout << out.dump(1) << "\n";
        return 0;
    }
    const auto load = expertLoad(*loaded.model, ids, chunk, parseInt(a, "top", 10));
    std::cout << expertLoadJson(load, *tok) << "\n";
    return 0;
}

int cmdInfo(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& i = loaded.model->info();
    nlohmann::ordered_json j;
    j["family"] = familyName(i.family);
    j["source"] = i.source;
    j["layers"] = i.layers;
    j["heads"] = i.heads;
    j["kv_heads"] = i.kvHeads;
    j["d_model"] = i.dModel;
    j["d_head"] = i.dHead;
    j["vocab_size"] = i.vocabSize;
    j["mem_len"] = i.defaultMemLen;
    j["positions"] = i.positions;
    j["weights"] = i.weightTypes;
    j["weight_bytes"] = i.weightBytes; // as stored: what the memory map holds once a forward pass has read them
    j["parameters"] = i.parameterCount;
    if (i.can.experts > 0)
        j["experts"] = i.can.experts;
    auto& nope = j["layers_without_positions"] = nlohmann::json::array();
    for (std::size_t l = 0; l < i.layerRules.size(); ++l)
        if (!i.layerRules[l].positions)
            nope.push_back(l + 1);
    auto& streams = j["streams"] = nlohmann::json::array();
    for (const auto& s : i.streams)
        streams.push_back(s.name);
    auto& sites = j["sites"] = nlohmann::json::array();
    for (const auto& s : i.sites)
        sites.push_back({{"site", s.label()},
                         {"queries", i.streams[static_cast<std::size_t>(s.queryStream)].name},
                         {"keys", i.streams[static_cast<std::size_t>(s.keyStream)].name},
                         {"causal", s.causal},
                         {"position_bias", s.positionBias}});
    std::cout << j.dump(2) << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (!attnscope::core::cpuCanRunThisBuild("attnscope-cli"))
        return 1;
    attnscope::core::returnLargeBlocksToSystem();
    const std::string command = argc >= 2 ? argv[1] : "";
    try {
        // --help anywhere (also after a command: `attnscope-cli scan --help`) prints the usage.
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
                std::cout << kUsage;
                return 0;
            }
        if (command == "--version") {
            std::cout << "attnscope-cli " << ATTNSCOPE_VERSION << "\ncompute library: "
                      << attnscope::core::compiledCpuLevel() << "\n";
            return 0;
        }
        const auto builtins = attnscope::builtinModelDirs(argv[0]);
        if (command == "dump")
            return cmdDump(parseArgs(argc, argv, {"model", "input", "out", "pixel-values"}), builtins);
        if (command == "tokenize")
            return cmdTokenize(parseArgs(argc, argv, {"tokenizer", "text", "text-file", "pair", "pair-file"},
                                             {"special", "type-ids", "target"}),
                                   builtins);
        if (command == "scan")
            return cmdScan(parseArgs(argc, argv, {"model", "text-file", "mem-len", "segment-length", "max-tokens",
                                                  "terms", "shard", "same-length", "clamp-len", "out"}),
                           builtins);
        if (command == "merge")
            return cmdMerge(argc, argv);
        if (command == "heads")
            return cmdHeads(argc, argv, builtins);
        if (command == "info")
            return cmdInfo(parseArgs(argc, argv, {"model"}), builtins);
        if (command == "experts")
            return cmdExperts(parseArgs(argc, argv, {"model", "text", "text-file", "chunk", "top"}, {"per-token"}), builtins);
        if (command == "predict")
            return cmdPredict(parseArgs(argc, argv, {"model", "text", "text-file", "pair", "top", "position", "source"}), builtins);
        if (command == "generate")
            return cmdGenerate(parseArgs(argc, argv, {"model", "text", "text-file", "max-new-tokens", "temperature",
                                                      "top-k", "top-p", "seed", "source", "image", "input", "audio",
                                                      "features", "language", "task"},
                                         {"allow-special"}),
                               builtins);
        if (command == "features")
            return cmdFeatures(parseArgs(argc, argv, kFeaturesOptions), builtins);
        if (command == "align")
            return cmdAlign(parseArgs(argc, argv, kAlignOptions), builtins);
        if (command == "surprisal")
            return cmdSurprisal(parseArgs(argc, argv, {"model", "text", "text-file"}), builtins);
        if (command == "lens")
            return cmdLens(parseArgs(argc, argv, {"model", "text", "text-file", "out"}), builtins);
        if (command == "patch")
            return cmdPatch(parseArgs(argc, argv, kPatchOptions, kPatchFlags), builtins);
        if (command == "path-patch")
            return cmdPathPatch(parseArgs(argc, argv, kPathPatchOptions, kPathPatchFlags), builtins);
        if (command == "attention")
            return cmdAttention(parseArgs(argc, argv, kAttentionOptions, kAttentionFlags), builtins);
        if (command == "page")
            return cmdPage(parseArgs(argc, argv, kPageOptions), builtins);
        if (command == "explain")
            return cmdExplain(parseArgs(argc, argv, kExplainOptions), builtins);
        if (command == "sentences")
            return cmdSentences(parseArgs(argc, argv, kSentenceOptions), builtins);
        if (command == "head-contexts")
            return cmdHeadContexts(parseArgs(argc, argv, kHeadContextOptions), builtins);
        if (command == "list-builtin") {
            for (const auto& n : listBuiltinModels(builtins))
                std::cout << builtinSpec(n) << "\n";
            return 0;
        }
        std::cerr << "attnscope-cli: " << (command.empty() ? "no command given" : "unknown command \"" + command + "\"")
                  << "\n\n"
                  << kUsage;
        return 2;
    } catch (const Error& e) {
        std::cerr << "attnscope-cli: error: " << e.what() << "\n";
        return 1;
    } catch (const std::bad_alloc&) { // an allocation no estimate foresaw: say so in words, not "std::bad_alloc"
        std::string model; // the file it happened with, as every other message names one
        for (int i = 1; i + 1 < argc; ++i)
            if (std::string(argv[i]) == "--model")
                model = argv[i + 1];
        std::cerr << "attnscope-cli: error: " << (model.empty() ? "" : model + ": ") << "out of memory: this " << command
                  << " needed more memory than the machine could give (try a shorter text or fewer tokens)\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "attnscope-cli: error: " << e.what() << "\n";
        return 1;
    }
}
