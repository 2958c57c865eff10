// The Python module's C++ side (_attnscope): models, captures and their attention as numpy arrays, over the core.
// Numbering as people read it: layers and heads from 1 in every argument; array axes from 0 as numpy's always are.
// Arrays own their memory (no copy out of the computation, read-only), so they outlive the model they came from.
#include "analysis/activation_patching.h"
#include "analysis/atlas_recipe.h"
#include "analysis/attention_grid.h"
#include "analysis/head_ablation.h"
#include "analysis/head_explanation.h"
#include "analysis/logit_lens.h"
#include "analysis/qk_space.h"
#include "analysis/rollout.h"
#include "analysis/scan_recipe.h"
#include "analysis/token_predictions.h"
#include "builtin_paths.h"
#include "model/model_loader.h"
#include "export/attention_page.h"
#include "run/layer_attention.h"
#include "run/patch_prompts.h"
#include "model/run_limits.h"
#include "run/text_capture.h"
#include "run/image_capture.h"
#include "run/picture_prompt.h"
#include "run/speech_run.h"
#include "image/png_reader.h"
#include "image/preprocess.h"
#include "model/seq2seq.h"
#include "model/vision.h"
#include "tokenize/id_tokenizer.h"
#include "tokenize/tokenizer.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/message_text.h"
#include "util/stop_token.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace attnscope::core;

namespace {

// Runs `job` on a worker thread with the GIL released while this thread asks Python for signals every 100 ms:
// Ctrl-C requests `stop`, the job ends at its next check of it (the core checks between segments and layers), and
// the KeyboardInterrupt is raised here, within a second or two instead of after the whole computation.
template <class Job>
auto interruptible(StopToken& stop, Job job) -> decltype(job())
{
    auto done = std::async(std::launch::async, std::move(job));
    bool interrupted = false;
    {
        py::gil_scoped_release free;
        while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
            py::gil_scoped_acquire hold;
            if (!interrupted && PyErr_CheckSignals() != 0) { // the KeyboardInterrupt stays set until it is raised
                interrupted = true;
                stop.requestStop();
            }
        }
    }
    if (interrupted) {
        try {
            (void)done.get(); // a cancelled job's own error or partial result gives way to the interrupt
        } catch (...) {
        }
        throw py::error_already_set();
    }
    return done.get();
}

// A float32 array over a vector it takes over, read-only.
py::array_t<float> ownedArray(std::vector<float>&& data, std::vector<py::ssize_t> shape)
{
    auto* owned = new std::vector<float>(std::move(data));
    py::capsule free(owned, [](void* p) { delete static_cast<std::vector<float>*>(p); });
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t step = sizeof(float);
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = step;
        step *= shape[i];
    }
    py::array_t<float> a(shape, strides, owned->data(), free);
    a.attr("flags").attr("writeable") = false;
    return a;
}

// A page's layers and heads as Python numbers them (from 1; None: all) for the core (from 0).
PageOptions pageOptions(const std::optional<std::vector<int>>& layers, const std::optional<std::vector<int>>& heads)
{
    PageOptions o;
    for (int l : layers.value_or(std::vector<int>{}))
        o.layers.push_back(l - 1);
    for (int h : heads.value_or(std::vector<int>{}))
        o.heads.push_back(h - 1);
    return o;
}

// Jupyter: a page in a frame of its own, so its script runs and its styles stay inside.
std::string inFrame(const std::string& page)
{
    std::string quoted;
    for (char ch : page)
        quoted += ch == '&' ? std::string("&amp;") : ch == '"' ? std::string("&quot;") : std::string(1, ch);
    return "<iframe style=\"width: 100%; height: 680px; border: 0\" srcdoc=\"" + quoted + "\"></iframe>";
}

// A list of floats (or rows of them) as a read-only float32 array.
py::array_t<float> arrayOf(const std::vector<float>& v)
{
    return ownedArray(std::vector<float>(v), {static_cast<py::ssize_t>(v.size())});
}
py::array_t<float> arrayOf(const std::vector<std::vector<float>>& rows)
{
    std::vector<float> flat;
    for (const auto& r : rows)
        flat.insert(flat.end(), r.begin(), r.end());
    const auto width = rows.empty() ? 0 : static_cast<py::ssize_t>(rows.front().size());
    return ownedArray(std::move(flat), {static_cast<py::ssize_t>(rows.size()), width});
}
py::array_t<float> arrayOf(const std::vector<double>& v, std::vector<py::ssize_t> shape)
{
    return ownedArray(std::vector<float>(v.begin(), v.end()), std::move(shape));
}

// Layers and heads as people number them (from 1), checked against the model; the index from 0.
int layerIndex(const ModelInfo& info, int layer)
{
    if (layer < 1 || layer > info.layers)
        throw Error(ErrorCode::BadInput, "layer " + std::to_string(layer) + " does not exist: layers are 1 .. " +
                                             std::to_string(info.layers));
    return layer - 1;
}
// A head of `site` (its own count: a convolution's channels), or with site -1 of the model's attention.
int headIndex(const ModelInfo& info, int head, int site = -1)
{
    const int heads = site >= 0 && site < info.siteCount() ? info.site(site).heads : info.heads;
    if (head < 1 || head > heads)
        throw Error(ErrorCode::BadInput, "head " + std::to_string(head) + " does not exist: heads are 1 .. " +
                                             std::to_string(heads));
    return head - 1;
}

// A corpus scan's result (analysis/scan_result.h) as numpy arrays.
class Scan {
public:
    explicit Scan(ScanResult r) : m_result(std::move(r)) {}
    std::vector<std::string> profiles() const { return m_result.profileNames; }
    std::int64_t tokens() const { return m_result.tokens; }
    bool partial() const { return m_result.partial; }
    std::map<std::string, std::string> metadata() const { return m_result.metadata; }
    py::array_t<float> profile(const std::string& name) const
    {
        if (!m_result.sums.count(name))
            throw Error(ErrorCode::BadInput, "the scan has no profile \"" + name + "\" (it has " + joined(m_result.profileNames) + ")");
        return ownedArray(m_result.average(name), {m_result.layers, m_result.heads, m_result.distances});
    }
    py::array_t<float> count() const { return arrayOf(m_result.count, {m_result.distances}); }
    // Every head's summary (figures.md "Head atlas") as [layers, heads] arrays, and the per-query statistics kept.
    py::dict heads(const std::string& profileName) const
    {
        profile(profileName); // named check
        const auto summaries = summariseHeads(m_result, profileName);
        const std::pair<const char*, double HeadSummary::*> fields[] = {
            {"entropy", &HeadSummary::entropy},       {"mean_distance", &HeadSummary::meanDistance},
            {"span", &HeadSummary::span},             {"mass_near_5", &HeadSummary::massNear5},
            {"mass_near_50", &HeadSummary::massNear50}, {"previous_token", &HeadSummary::previousToken},
            {"query_entropy", &HeadSummary::queryEntropy}, {"attended_distance", &HeadSummary::attendedDistance},
            {"first_key_mass", &HeadSummary::firstKeyMass}, {"sink_rate", &HeadSummary::sinkRate}};
        py::dict d;
        for (const auto& [name, field] : fields) {
            std::vector<double> v;
            for (const auto& h : summaries)
                v.push_back(h.*field);
            d[name] = arrayOf(v, {m_result.layers, m_result.heads});
        }
        return d;
    }
    void save(const std::string& path) const { m_result.save(path); }

private:
    static std::string joined(const std::vector<std::string>& names)
    {
        std::string out;
        for (const auto& n : names)
            out += (out.empty() ? "" : ", ") + n;
        return out;
    }
    ScanResult m_result;
};

class Model;

class Capture {
public:
    Capture(std::shared_ptr<const LoadedModel> model, std::shared_ptr<const TextCapture> capture, std::string spec,
            std::string text, std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Image8> picture = nullptr)
        : m_model(std::move(model))
        , m_capture(std::move(capture))
        , m_spec(std::move(spec))
        , m_text(std::move(text))
        , m_tokenizer(std::move(tokenizer))
        , m_picture(std::move(picture))
    {
    }
    std::vector<std::string> tokens() const
    {
        std::vector<std::string> out;
        for (const auto& t : m_capture->tokens)
            out.push_back(t.text);
        return out;
    }
    std::vector<std::int32_t> ids() const
    {
        return idsOf(m_capture->tokens);
    }
    int segments() const { return static_cast<int>(m_capture->segments.size()); }

    // A read stream's tokens (an encoder-decoder model's source); empty for a model of one stream.
    std::vector<std::string> sourceTokens() const
    {
        std::vector<std::string> out;
        for (const auto& t : readTokens())
            out.push_back(t.text);
        return out;
    }
    std::vector<std::int32_t> sourceIds() const { return idsOf(readTokens()); }
    int written() const { return m_written; }
    // What the stream says: the text run, and after it what the model wrote (a translation's target).
    std::string text() const
    {
        const std::string& t = m_capture->text;
        const auto first = m_written > 0 ? t.find_first_not_of(' ') : 0;
        return first == std::string::npos ? std::string() : t.substr(first);
    }
    // The model's sites: name (self; encoder, decoder, cross), layer (from 1 in its stack), label, the query and key
    // streams, causal.
    py::list sites() const
    {
        const auto& info = m_capture->model;
        py::list out;
        for (const auto& site : info.sites) {
            py::dict d;
            d["name"] = site.key();
            d["layer"] = site.layer + 1;
            d["label"] = site.label();
            d["queries"] = info.streams[static_cast<std::size_t>(site.queryStream)].name;
            d["keys"] = info.streams[static_cast<std::size_t>(site.keyStream)].name;
            d["causal"] = site.causal;
            d["mixer"] = mixerRow(site.mixer).key;
            d["heads"] = site.heads;
            out.append(d);
        }
        return out;
    }

    // [heads, q, k] (one head: [1, q, k]) of a segment; masked keys 0 (probabilities) or NaN (raw scores).
    py::array_t<float> attention(int layer, std::optional<int> head, std::optional<int> segment, bool raw,
                                 std::optional<std::string> site) const
    {
        const int index = siteIndex(layer, site);
        if (head)
            headIndex(m_capture->model, *head, index);
        const int s = segmentIndex(segment);
        // The site's probabilities as the forward pass computes them (the numbers `attnscope-cli dump` writes).
        LayerAttention keep;
        {
            py::gil_scoped_release free;
            keep = layerAttention(*m_model->model, *m_capture, s, index, raw);
        }
        if (head) {
            const auto per = static_cast<std::ptrdiff_t>(keep.queries) * keep.keys;
            std::vector<float> one(keep.values.begin() + per * (*head - 1), keep.values.begin() + per * *head);
            return ownedArray(std::move(one), {1, keep.queries, keep.keys});
        }
        return ownedArray(std::move(keep.values), {keep.heads, keep.queries, keep.keys});
    }

    // [layers + 1, q, d_model]: the embeddings (index 0) and each layer's output (index l: after layer l).
    py::array_t<float> hiddenStates(std::optional<int> segment) const
    {
        const int s = segmentIndex(segment);
        struct Keep final : AttentionObserver {
            std::vector<float> values;
            py::ssize_t q = 0, d = 0;
            int layers = 0;
            bool wantProbabilities() const override { return false; }
            void onSegment(const SegmentView& v) override
            {
                q = v.qlen;
                d = v.dModel;
                values.assign(v.embedding, v.embedding + q * d);
            }
            void onLayer(const LayerView& v) override
            {
                values.insert(values.end(), v.hidden, v.hidden + q * d);
                ++layers;
            }
        } keep;
        {
            py::gil_scoped_release free;
            rerunSegment(*m_model->model, *m_capture, s, keep, nullptr);
        }
        return ownedArray(std::move(keep.values), {keep.layers + 1, keep.q, keep.d});
    }

    // [q, vocab]: the logits the model's head gives each position of the segment.
    py::array_t<float> logits(std::optional<int> segment) const
    {
        const int s = segmentIndex(segment);
        KeptLogits keep;
        {
            py::gil_scoped_release free;
            checkFits(logitsBytes(m_capture->model, static_cast<std::size_t>(m_capture->segment(s).qlen)),
                      "the logits of a segment", "use shorter segments");
            rerunSegment(*m_model->model, *m_capture, s, keep, nullptr);
        }
        if (keep.logits.empty())
            throw Error(ErrorCode::BadInput, m_capture->model.source + " has no output layer: no logits");
        return ownedArray(std::move(keep.logits), {keep.rows, keep.vocab});
    }

    // The logit lens of a segment: every layer's output read out by the final norm and head.
    py::dict logitLens(std::optional<int> segment, int k) const
    {
        const int s = segmentIndex(segment);
        LogitLens lens;
        {
            py::gil_scoped_release free;
            lens = attnscope::core::logitLens(*m_model->model, *m_capture, s, k);
        }
        std::vector<float> probability(lens.actualProbability.begin(), lens.actualProbability.end());
        for (auto& p : probability)
            if (p < 0)
                p = std::nanf("");
        py::list top;
        for (int l = 0; l < lens.layers; ++l) {
            py::list row;
            for (int p = 0; p < lens.positions; ++p) {
                py::list cell;
                for (const auto& t : lens.at(l, p))
                    cell.append(py::make_tuple(t.id, t.probability));
                row.append(cell);
            }
            top.append(row);
        }
        py::dict d;
        d["top"] = top;
        d["probability"] = ownedArray(std::move(probability), {lens.layers, lens.positions});
        d["next_token"] = lens.nextToken;
        d["first_position"] = lens.firstPosition + 1;
        return d;
    }

    // The head atlas of this text (analysis/atlas_recipe.h, as the app and the CLI build it): every column as a
    // [layers, heads] array.
    py::dict atlas() const
    {
        AtlasOfText made;
        {
            py::gil_scoped_release free;
            AtlasRecipe recipe;
            recipe.capture = m_capture.get();
            recipe.tokenizer = m_tokenizer.get();
            made = atlasOfText(*m_model->model, recipe);
        }
        const auto& a = made.atlas;
        const auto& columns = atlasColumns();
        py::dict d;
        for (std::size_t c = 0; c < columns.size(); ++c) {
            std::vector<float> values(a.rows.size());
            for (std::size_t i = 0; i < a.rows.size(); ++i)
                values[i] = static_cast<float>(atlasValue(a.rows[i], c));
            d[columns[c].key] = ownedArray(std::move(values), {a.layers, a.heads});
        }
        return d;
    }

    // One head's score split into its terms (Transformer-XL's (a)-(d), a rotary model's bands, DeepSeek's rotary and
    // content): name -> [q, k], each term alone, scaled, before any soft cap; masked keys NaN.
    py::dict terms(int layer, int head, std::optional<int> segment) const
    {
        const auto& info = m_capture->model;
        const int l = layerIndex(info, layer), h = headIndex(info, head, l), s = segmentIndex(segment);
        std::optional<BandSplit> split;
        std::vector<std::string> names;
        if (info.hasRelativeTerms) {
            names = {"a", "b", "c", "d"};
        } else if (auto bands = defaultBands(info)) {
            split = std::move(bands);
            for (int b = 0; b < split->count(); ++b)
                names.push_back(split->shortName(b));
        } else {
            throw Error(ErrorCode::BadInput, info.source + ": this model's scores do not split into terms (it has neither "
                                                          "relative terms nor rotary positions)");
        }
        py::dict d;
        for (std::size_t t = 0; t < names.size(); ++t) {
            GridOptions o;
            o.terms = {t == 0, t == 1, t == 2, t == 3};
            o.terms.raw = true;
            o.terms.uncapped = true;
            o.bands = split ? &*split : nullptr;
            AttentionGrid g;
            {
                py::gil_scoped_release free;
                g = attentionGrid(*m_capture, s, l, {h}, o);
            }
            d[names[t].c_str()] = ownedArray(std::move(g.values), {g.rows, g.cols});
        }
        return d;
    }

    // One head's queries and keys as its scores use them (rotated; Transformer-XL: the content keys of term (a)).
    py::dict queriesKeys(int layer, int head, std::optional<int> segment) const
    {
        const auto& info = m_capture->model;
        QkVectors v = headQkVectors(*m_capture, segmentIndex(segment), layerIndex(info, layer), headIndex(info, head));
        py::dict d;
        d["queries"] = ownedArray(std::move(v.queries), {v.nq(), v.dim});
        d["keys"] = ownedArray(std::move(v.keys), {v.nk(), v.dim});
        d["query_tokens"] = v.queryPositions;
        d["key_tokens"] = v.keyPositions;
        return d;
    }

    // How one head computes one query's row (analysis/head_explanation.h): the mechanism view's numbers.
    py::dict explain(int layer, int head, int position) const
    {
        const auto& info = m_capture->model;
        const int l = layerIndex(info, layer), h = headIndex(info, head, l);
        const auto tokens = static_cast<int>(m_capture->tokens.size());
        if (position < 1 || position > tokens)
            throw Error(ErrorCode::BadInput, "position " + std::to_string(position) + " does not exist: tokens are 1 .. " +
                                                 std::to_string(tokens));
        HeadExplanation e;
        {
            py::gil_scoped_release free;
            e = explainHead(*m_model->model, *m_capture, l, h, position - 1);
        }
        py::dict d;
        d["scale"] = e.scale;
        d["soft_cap"] = e.softCap;
        d["sink"] = e.sink ? py::cast(*e.sink) : py::none();
        d["kv_head"] = e.kvHead + 1;
        d["key_tokens"] = e.keyPositions;
        d["scores"] = arrayOf(e.scores);
        d["probs"] = arrayOf(e.probs);
        d["query"] = arrayOf(e.query);
        d["keys"] = arrayOf(e.keys);
        d["values"] = e.values.empty() ? py::object(py::none()) : py::object(arrayOf(e.values));
        d["output"] = e.output.empty() ? py::object(py::none()) : py::object(arrayOf(e.output));
        return d;
    }

    // Attention rollout of a segment (analysis/rollout.h): [q, k], NaN where a position cannot reach.
    py::array_t<float> rollout(std::optional<int> segment) const
    {
        const int s = segmentIndex(segment);
        AttentionGrid g;
        {
            py::gil_scoped_release free;
            g = attentionRollout(*m_capture, s);
        }
        return ownedArray(std::move(g.values), {g.rows, g.cols});
    }

    // Every head zeroed in turn (analysis/head_ablation.h), the text run in the capture's segments.
    py::dict ablation() const
    {
        AblationResult r;
        {
            py::gil_scoped_release free;
            const auto ids = idsOf(m_capture->tokens);
            r = headAblation(*m_model->model, ids, m_capture->segmentLen);
        }
        std::vector<double> change(r.loss.size());
        for (std::size_t i = 0; i < change.size(); ++i)
            change[i] = r.loss[i] - r.baseLoss;
        py::dict d;
        d["base_loss"] = r.baseLoss;
        d["loss"] = arrayOf(r.loss, {r.layers, r.heads});
        d["change"] = arrayOf(change, {r.layers, r.heads});
        d["predictions"] = r.predictions;
        return d;
    }

    // A head's queries and keys embedded in 2-D (analysis/qk_space.h, AttentionViz's normalisation first).
    py::dict qkEmbedding(int layer, int head, const std::string& method, std::optional<int> segment, std::uint64_t seed) const
    {
        const auto& info = m_capture->model;
        const auto chosen = qkMethodNamed(method);
        if (!chosen)
            throw Error(ErrorCode::BadInput, "method must be pca, tsne or umap, got \"" + method + "\"");
        QkVectors v = headQkVectors(*m_capture, segmentIndex(segment), layerIndex(info, layer), headIndex(info, head));
        QkEmbedding e;
        {
            py::gil_scoped_release free;
            normaliseQk(v);
            TsneOptions tsne;
            tsne.seed = seed;
            e = embedQk(v, *chosen, tsne);
        }
        py::dict d;
        const auto n = static_cast<py::ssize_t>(e.x.size());
        d["x"] = ownedArray(std::move(e.x), {n});
        d["y"] = ownedArray(std::move(e.y), {n});
        d["queries"] = e.queries;
        d["keys"] = e.keys;
        std::vector<std::int64_t> tokens = v.queryPositions;
        tokens.insert(tokens.end(), v.keyPositions.begin(), v.keyPositions.end());
        d["tokens"] = tokens;
        d["keys_are_distances"] = v.keysAreDistances;
        d["correlation"] = e.correlation;
        d["kl_divergence"] = e.klDivergence;
        return d;
    }

    // A session file the desktop app opens on this model, text, layer and head (app/ui/session.h's format).
    std::string saveSession(const std::string& path, int layer, int head) const
    {
        const auto& info = m_capture->model;
        layerIndex(info, layer);
        headIndex(info, head);
        if (m_capture->image)
            throw Error(ErrorCode::BadInput, "a session holds a text: open the picture in the app (File > Open Image, "
                                             "or attnscope --model MODEL --image FILE)");
        nlohmann::json j;
        j["format"] = "attnscope-session/1";
        j["model"] = m_spec;
        j["text"] = m_text;
        j["selection"]["layer"] = layer - 1; // the app's selection counts from 0
        j["selection"]["heads"] = {head - 1};
        const bool hasExtension = std::filesystem::path(path).has_extension();
        const std::string file = hasExtension ? path : path + ".attnscope";
        writeFileAtomically(file, j.dump(2));
        return file;
    }

    // The self-contained page (export/attention_page.h) of these layers and heads (from 1; None: all).
    std::string html(std::optional<std::vector<int>> layers, std::optional<std::vector<int>> heads) const
    {
        PageOptions o = pageOptions(layers, heads);
        o.picture = m_picture;
        return attentionPageHtml(*m_capture, m_model->model->info().source, o);
    }

private:
    const std::vector<Token>& readTokens() const
    {
        static const std::vector<Token> none;
        const int read = m_capture->model.typedReadStream();
        return read >= 0 ? m_capture->streamTokens(read) : none;
    }
    // The site of `layer` (from 1) among the sites named `site` ("self"; "encoder", "decoder", "cross"); None: the
    // model's first kind (a single-stream model's layers, an encoder-decoder model's encoder).
    int siteIndex(int layer, const std::optional<std::string>& site) const
    {
        const auto& info = m_capture->model;
        const std::string key = site ? *site : std::string(info.site(0).key());
        int index = -1, layers = 0;
        std::string keys;
        for (int i = 0; i < info.siteCount(); ++i) {
            const std::string k = info.site(i).key();
            if (keys.find("\"" + k + "\"") == std::string::npos)
                keys += std::string(keys.empty() ? "" : ", ") + "\"" + k + "\"";
            if (k != key)
                continue;
            ++layers;
            if (info.site(i).layer == layer - 1)
                index = i;
        }
        if (layers == 0)
            throw Error(ErrorCode::BadInput, "site must be " + keys + ", got \"" + key + "\"");
        if (index < 0)
            throw Error(ErrorCode::BadInput, "layer " + std::to_string(layer) + " does not exist: the " +
                                                 (key == "self" ? std::string() : key + " ") + "layers are 1 .. " +
                                                 std::to_string(layers));
        return index;
    }
    // A segment number from 1 (None: the only one) as an index.
    int segmentIndex(std::optional<int> segment) const
    {
        const int segs = segments();
        if (segment) {
            if (*segment < 1 || *segment > segs)
                throw Error(ErrorCode::BadInput, "segment " + std::to_string(*segment) + " does not exist: segments are 1 .. " +
                                                     std::to_string(segs));
            return *segment - 1;
        }
        if (segs > 1)
            throw Error(ErrorCode::BadInput, "the text ran in " + std::to_string(segs) + " segments: say which (segment=1 .. " +
                                                 std::to_string(segs) + ")");
        return 0;
    }

    std::shared_ptr<const LoadedModel> m_model; // keeps the weights mapped while the capture lives
    std::shared_ptr<const TextCapture> m_capture;
    std::string m_spec; // the model as the app opens it (an absolute path, or builtin:NAME)
    std::string m_text; // the text as the app's text box takes it
    std::shared_ptr<const Tokenizer> m_tokenizer; // null: the model has none (the induction test then uses ids only)
    std::shared_ptr<const Image8> m_picture;      // a picture as the model read it (run from a file), for the page

public:
    int m_written = 0; // tokens the model wrote after the given ones (an encoder-decoder model's greedy translation)
};

class Model {
public:
    explicit Model(const std::string& spec)
        : m_loaded(std::make_shared<LoadedModel>(loadModel(spec, attnscope::builtinModelDirs(""))))
        , m_spec(isBuiltinSpec(spec) ? spec : std::filesystem::absolute(spec).string())
    {
        try {
            m_tokenizer = std::shared_ptr<Tokenizer>(loadModelTokenizer(*m_loaded).release());
            if (m_loaded->model->info().typedReadStream() >= 0)
                m_targetTokenizer = std::shared_ptr<Tokenizer>(loadModelTargetTokenizer(*m_loaded).release());
        } catch (const Error&) { // weights without tokenizer files: token ids only
        }
    }
    py::dict info() const
    {
        const auto& i = m_loaded->model->info();
        py::dict d;
        d["family"] = familyName(i.family);
        d["source"] = i.source;
        d["layers"] = i.layers;
        d["heads"] = i.heads;
        d["kv_heads"] = i.kvHeads;
        d["d_model"] = i.dModel;
        d["d_head"] = i.dHead;
        d["vocab_size"] = i.vocabSize;
        d["weights"] = i.weightTypes;
        float cap = 0;
        for (const auto& r : i.layerRules)
            cap = std::max(cap, r.softCap);
        d["soft_cap"] = cap; // 0: no layer soft-caps its scores
        if (i.pictureToken >= 0) { // a vision-language model: its placeholder and a picture's image tokens
            d["picture_token"] = i.pictureToken;
            d["picture_tokens"] = i.pictureTokens;
        }
        return d;
    }
    bool hasTokenizer() const { return static_cast<bool>(m_tokenizer); }

    // A text or ids (one stream), a source with an optional target (encoder-decoder), or a picture (vision).
    py::object run(std::optional<std::string> text, std::optional<std::vector<std::int32_t>> ids,
                   std::optional<int> segmentLength, std::optional<int> memLength, std::optional<std::string> target,
                   std::optional<std::vector<std::int32_t>> targetIds, int maxNewTokens, std::optional<std::string> image,
                   std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> pixelValues,
                   std::optional<std::vector<std::int32_t>> tokenTypes, std::optional<std::vector<int>> attentionMask,
                   std::optional<bool> sameLength, std::optional<int> clampLen,
                   std::optional<std::vector<std::string>> images, std::optional<std::string> audio) const
    {
        const auto& can = m_loaded->model->info().can;
        if (can.audio || audio)
            return py::cast(runSpeech(audio, text, ids, maxNewTokens));
        if (images) {
            if (image || images->size() != 1)
                throw Error(ErrorCode::BadInput, "give run() one picture: images=[\"file.png\"] (several pictures in "
                                                 "one prompt are not read yet)");
            image = images->front();
        }
        if (m_loaded->model->info().pictureToken >= 0 && image)
            return py::cast(runPicturePrompt(text, ids, *image));
        if (can.image)
            return py::cast(runPicture(image, pixelValues, text.has_value() || ids.has_value()));
        if (image || pixelValues)
            throw Error(ErrorCode::BadInput, m_loaded->model->info().source + " reads text, not pictures");
        if (m_loaded->model->info().typedReadStream() >= 0)
            return py::cast(runTranslation(text, ids, target, targetIds, maxNewTokens));
        if (target || targetIds)
            throw Error(ErrorCode::BadInput, m_loaded->model->info().source + " reads one stream: a target is for "
                                                                             "encoder-decoder models");
        CaptureOptions o;
        if (segmentLength)
            o.segmentLen = *segmentLength;
        if (memLength)
            o.run.memLen = *memLength;
        o.run.sameLength = sameLength;
        o.run.clampLen = clampLen;
        // An encoder's inputs as a reference's input.json gives them: token types, and padding (attention_mask 0).
        const std::size_t n = ids ? ids->size() : 0;
        if (tokenTypes) {
            if (!ids || tokenTypes->size() != n)
                throw Error(ErrorCode::BadInput, "token_type_ids needs ids=[...] of the same length");
            o.run.tokenTypes = *tokenTypes;
        }
        if (attentionMask) {
            if (!ids || attentionMask->size() != n)
                throw Error(ErrorCode::BadInput, "attention_mask needs ids=[...] of the same length");
            for (int m : *attentionMask)
                o.run.padding.push_back(m == 0 ? 1 : 0);
        }
        return py::cast(runText(text, ids, o));
    }

    // A speech model's recording with its transcript: ids (from the start token, or text tokens after the prompt), a
    // text (tokenized, after the prompt), or the model's own greedy transcription. A Capture of the transcript.
    Capture runSpeech(const std::optional<std::string>& audio, const std::optional<std::string>& text,
                      const std::optional<std::vector<std::int32_t>>& ids, int maxNewTokens) const
    {
        const auto& model = *m_loaded->model;
        if (!model.info().can.audio)
            throw Error(ErrorCode::BadInput, model.info().source + " reads text, not audio");
        if (!audio)
            throw Error(ErrorCode::BadInput, model.info().source + " listens: give run() audio=\"file.wav\"");
        if (text && ids)
            throw Error(ErrorCode::BadInput, "give run() the transcript as a text or ids=[...], not both");
        if (text && !m_tokenizer)
            throw Error(ErrorCode::BadInput, model.info().source + " has no tokenizer files: give ids=[...]");
        std::shared_ptr<const TextCapture> capture;
        {
            py::gil_scoped_release free;
            const auto features = audioFeaturesOfFile(model, m_loaded->folder, *audio);
            const SpeechSettings settings = readSpeechSettings(m_loaded->folder, model.info());
            std::vector<std::int32_t> given;
            if (text)
                for (const auto& t : m_tokenizer->encode(*text))
                    given.push_back(t.id);
            else if (ids)
                given = *ids;
            const auto decoder = speechDecoderIds(model, settings, features, text || ids ? &given : nullptr, maxNewTokens);
            CaptureOptions o;
            o.run.audio = features;
            capture = captureText(model, tokensOfIds(decoder, m_tokenizer.get()), o);
        }
        return Capture(m_loaded, capture, m_spec, text.value_or(std::string()), m_tokenizer);
    }

    // A vision-language model's prompt (a text, or ids) with a picture: a placeholder is put where the text starts
    // (after a BOS) when the prompt has none, and expanded to the picture's image tokens.
    Capture runPicturePrompt(const std::optional<std::string>& text, const std::optional<std::vector<std::int32_t>>& ids,
                             const std::string& image) const
    {
        if (text.has_value() == ids.has_value())
            throw Error(ErrorCode::BadInput, "give run() a text or ids=[...] beside the picture, one of them");
        const auto& model = *m_loaded->model;
        if (text && !m_tokenizer)
            throw Error(ErrorCode::BadInput, model.info().source + " has no tokenizer files: give ids=[...]");
        PicturePrompt prompt;
        std::shared_ptr<const TextCapture> capture;
        {
            py::gil_scoped_release free;
            prompt = text ? picturePromptOfText(model, *m_tokenizer, m_loaded->folder, {image}, *text)
                          : picturePrompt(model, m_loaded->folder, {image}, *ids);
            std::vector<Token> tokens = pictureTokens(model, prompt, m_tokenizer.get());
            CaptureOptions o;
            o.run = prompt.runOptions();
            capture = captureText(model, std::move(tokens), o);
        }
        return Capture(m_loaded, capture, m_spec, text.value_or(std::string()), m_tokenizer);
    }

    Capture runText(std::optional<std::string> text, std::optional<std::vector<std::int32_t>> ids,
                    const CaptureOptions& o) const
    {
        if (text.has_value() == ids.has_value())
            throw Error(ErrorCode::BadInput, "give run() a text or ids=[...], one of them");
        const auto& model = *m_loaded->model;
        std::shared_ptr<const TextCapture> capture;
        std::vector<Token> tokens;
        if (ids)
            for (auto id : *ids)
                tokens.push_back({id, m_tokenizer ? m_tokenizer->pieceOf(id) : "<" + std::to_string(id) + ">", 0, 0});
        else if (!m_tokenizer)
            throw Error(ErrorCode::BadInput, model.info().source + " has no tokenizer files: give ids=[...]");
        {
            py::gil_scoped_release free;
            capture = ids ? captureText(model, std::move(tokens), o) : captureText(model, *m_tokenizer, *text, o);
        }
        std::string typed; // what the app's text box would hold: the text, or the ids spelled back
        if (text) {
            typed = *text;
        } else {
            for (auto id : *ids)
                typed += m_tokenizer ? m_tokenizer->textOf(id) : (typed.empty() ? "" : " ") + std::to_string(id);
        }
        return Capture(m_loaded, capture, m_spec, typed, m_tokenizer);
    }

    // The source (text or ids) translated: the target typed (teacher forcing) and, without one, continued greedily.
    // A Capture of the target, its source a stream of it.
    Capture runTranslation(std::optional<std::string> text, std::optional<std::vector<std::int32_t>> ids,
                           std::optional<std::string> target, std::optional<std::vector<std::int32_t>> targetIds,
                           int maxNewTokens) const
    {
        if (text.has_value() == ids.has_value())
            throw Error(ErrorCode::BadInput, "give run() the source as a text or ids=[...], one of them");
        if (target && targetIds)
            throw Error(ErrorCode::BadInput, "give the target as a text or target_ids=[...], not both");
        if ((text || target) && !m_tokenizer)
            throw Error(ErrorCode::BadInput, m_loaded->model->info().source + " has no tokenizer files: give ids");
        const auto& model = *m_loaded->model;
        const auto& info = model.info();
        CaptureOptions o;
        o.streams.resize(info.streams.size());
        auto& source = o.streams[static_cast<std::size_t>(info.typedReadStream())];
        if (text)
            source = StreamText{*text, streamTokens(info, info.typedReadStream(), *m_tokenizer, *text)};
        else
            source.tokens = tokensOfIds(*ids, m_tokenizer.get());
        std::vector<Token> tokens;
        if (targetIds) // as the decoder reads them: the decoder start token first
            tokens = tokensOfIds(*targetIds, m_targetTokenizer.get());
        else
            tokens = target ? streamTokens(info, info.segmentStream(), *m_targetTokenizer, *target)
                            : tokensOfIds({info.streams[static_cast<std::size_t>(info.segmentStream())].startToken},
                                          m_targetTokenizer.get());
        const bool typed = target.has_value() || targetIds.has_value();
        const std::size_t given = tokens.size();
        std::shared_ptr<const TextCapture> capture;
        {
            py::gil_scoped_release free;
            if (typed)
                capture = captureText(model, std::move(tokens), o);
            else if (m_targetTokenizer)
                capture = writeGreedily(model, std::move(tokens), maxNewTokens, *m_targetTokenizer, o);
            else
                capture = writeGreedily(model, std::move(tokens), maxNewTokens, IdTokenizer(info.vocabSize), o);
        }
        Capture c(m_loaded, capture, m_spec, target ? *target : std::string(), m_targetTokenizer);
        c.m_written = static_cast<int>(capture->tokens.size() - given);
        return c;
    }

    // Tokens of ids as a tokenizer spells them (<id> without one).
    static std::vector<Token> tokensOfIds(const std::vector<std::int32_t>& ids, const Tokenizer* tokenizer)
    {
        std::vector<Token> tokens;
        for (auto id : ids)
            tokens.push_back({id, tokenizer ? tokenizer->pieceOf(id) : "<" + std::to_string(id) + ">", 0, 0});
        return tokens;
    }

    // A picture file (PNG, preprocessed as the folder's preprocessor_config.json says) or pixel values [3, H, W].
    Capture runPicture(const std::optional<std::string>& image,
                       const std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>>& pixels,
                       bool textGiven) const
    {
        const auto& info = m_loaded->model->info();
        if (textGiven || image.has_value() == pixels.has_value())
            throw Error(ErrorCode::BadInput, info.source + " reads pictures: give run() image=\"file.png\" or "
                                                          "pixel_values=array, one of them");
        if (image) {
            PictureCapture picture;
            {
                py::gil_scoped_release free;
                picture = capturePngFile(*m_loaded->model, m_loaded->folder, *image);
            }
            return Capture(m_loaded, picture.capture, m_spec, std::string(), nullptr, picture.seen);
        }
        const auto& a = *pixels;
        const bool batch = a.ndim() == 4 && a.shape(0) == 1;
        if (!(a.ndim() == 3 || batch) || a.shape(batch ? 1 : 0) != 3)
            throw Error(ErrorCode::BadInput, "pixel_values must be [3, height, width] (or [1, 3, height, width])");
        if (a.shape(batch ? 2 : 1) > 1 << 16 || a.shape(batch ? 3 : 2) > 1 << 16)
            throw Error(ErrorCode::BadInput, "pixel_values of more than 65,536 pixels a side: no vision model reads that");
        auto px = std::make_shared<PixelValues>();
        px->height = static_cast<int>(a.shape(batch ? 2 : 1));
        px->width = static_cast<int>(a.shape(batch ? 3 : 2));
        px->data.assign(a.data(), a.data() + a.size());
        std::shared_ptr<const TextCapture> capture;
        {
            py::gil_scoped_release free;
            capture = capturePicture(asVision(*m_loaded->model), std::move(px));
        }
        return Capture(m_loaded, capture, m_spec, std::string(), nullptr);
    }

    // The k most probable next tokens after a prompt (a causal model) or at each [MASK] (an encoder).
    py::list predict(const py::object& prompt, int k) const
    {
        const auto ids = promptOf(prompt);
        const auto& info = m_loaded->model->info();
        std::vector<int> positions;
        if (info.can.causal) {
            positions.push_back(static_cast<int>(ids.size()) - 1);
        } else {
            for (std::size_t i = 0; i < ids.size(); ++i)
                if (m_tokenizer && isMaskToken(Token{ids[i], m_tokenizer->pieceOf(ids[i]), 0, 0}))
                    positions.push_back(static_cast<int>(i));
            if (positions.empty())
                throw Error(ErrorCode::BadInput, "an encoder predicts at its mask token: put one in the prompt");
        }
        std::vector<std::vector<TokenPrediction>> top;
        {
            py::gil_scoped_release free;
            top = topPredictions(*m_loaded->model, ids, {}, positions, k);
        }
        py::list out;
        for (std::size_t i = 0; i < top.size(); ++i) {
            py::list one;
            for (const auto& t : top[i]) {
                py::dict d;
                d["id"] = t.id;
                d["token"] = m_tokenizer ? m_tokenizer->pieceOf(t.id) : "<" + std::to_string(t.id) + ">";
                d["probability"] = t.probability;
                one.append(d);
            }
            out.append(one);
        }
        return info.can.causal ? py::list(out[0]) : out;
    }

    // `tokens` new tokens after a prompt: greedy at temperature 0, else sampled (seeded, so repeatable).
    py::dict generate(const py::object& prompt, int tokens, double temperature, int topK, double topP, std::uint64_t seed,
                      bool allowSpecial) const
    {
        const auto ids = promptOf(prompt);
        Sampling sampling;
        sampling.greedy = temperature == 0;
        sampling.temperature = sampling.greedy ? 1.0 : temperature;
        sampling.topK = topK;
        sampling.topP = topP;
        checkSampling(sampling); // NaN, a negative temperature, top_k or top_p: refused by name

        if (!allowSpecial && m_tokenizer)
            sampling.excluded = controlTokenIds(*m_tokenizer);
        Generated g;
        {
            py::gil_scoped_release free;
            g = generateTokens(*m_loaded->model, ids, tokens, sampling, seed);
        }
        py::dict d;
        d["ids"] = g.ids;
        d["probabilities"] = g.probabilities;
        if (m_tokenizer) { // the text the new tokens add, as the app's Generate appends it
            std::string text;
            for (auto id : g.ids)
                text += m_tokenizer->textOf(id);
            d["text"] = bytesSpelled(text); // a last token that is part of a character: its bytes as <0xNN>
        }
        return d;
    }

    // A corpus scan (analysis/relpos_scan.h): a text or a text file, options as the CLI's `scan` takes them (unset: the
    // model's defaults, scan_recipe.h); `shard` = (i, n) scans the i-th of n line-aligned parts of a file, as a cluster
    // job does, for merge_scans.
    Scan scan(std::optional<std::string> text, std::optional<std::string> textFile, std::optional<int> memLen,
              std::optional<int> segmentLen, std::int64_t maxTokens, const std::string& terms,
              std::optional<std::pair<int, int>> shard) const
    {
        if (text.has_value() == textFile.has_value())
            throw Error(ErrorCode::BadInput, "give scan() a text or text_file=..., one of them");
        if (shard && !textFile)
            throw Error(ErrorCode::BadInput, "shard=(i, n) splits a text file: give text_file=...");
        if (!m_tokenizer)
            throw Error(ErrorCode::BadInput, m_loaded->model->info().source + " has no tokenizer files: a scan reads text");
        ScanChoices c;
        c.memLen = memLen;
        c.segmentLen = segmentLen;
        c.maxTokens = maxTokens;
        c.terms = terms;
        ScanOptions o = scanOptionsFor(m_loaded->model->info(), c);
        StopToken stop;
        o.stop = &stop;
        const auto& model = *m_loaded->model;
        const Tokenizer& tokenizer = *m_tokenizer;
        return Scan(interruptible(stop, [&] {
            return text ? scanText(model, tokenizer, *text, o)
                        : scanTextFile(model, tokenizer, *textFile, o, shard ? shard->first : 1, shard ? shard->second : 1);
        }));
    }

    // Activation patching (analysis/activation_patching.h); prompts as texts or id lists, answers as ids or words.
    py::dict patch(const py::object& clean, const py::object& corrupt, const py::object& answer, const py::object& wrong,
                   const std::string& component, bool perPosition, bool noising) const
    {
        PatchRequest r;
        r.clean = promptOf(clean);
        r.corrupt = promptOf(corrupt);
        r.metric.answer = answerOf(answer);
        r.metric.wrong = answerOf(wrong);
        r.component = patchComponentNamed(component);
        r.perPosition = perPosition;
        r.noising = noising;
        PatchResult result;
        {
            py::gil_scoped_release free;
            result = patchActivations(*m_loaded->model, r);
        }
        std::vector<py::ssize_t> shape(result.shape.begin(), result.shape.end());
        std::vector<float> scores(result.scores.begin(), result.scores.end());
        py::dict d;
        d["m_clean"] = result.clean;
        d["m_corrupt"] = result.corrupt;
        d["axes"] = result.axes;
        d["scores"] = ownedArray(std::move(scores), shape);
        return d;
    }

    // Path patching of one sender head (layer, head from 1) into receivers ((layer, unit) from 1); or, with
    // sender "all" or a list of heads, the map of every such sender's score.
    py::dict pathPatch(const py::object& clean, const py::object& corrupt, const py::object& answer,
                       const py::object& wrong, const py::object& sender,
                       const std::vector<std::pair<int, int>>& receivers, const std::string& input, bool receiverHeadOnly,
                       bool freezeMlps, bool noising) const
    {
        PathPatchRequest r;
        r.clean = promptOf(clean);
        r.corrupt = promptOf(corrupt);
        r.metric.answer = answerOf(answer);
        r.metric.wrong = answerOf(wrong);
        if (input != "q" && input != "k" && input != "v")
            throw Error(ErrorCode::BadInput, "input must be 'q', 'k' or 'v', got '" + input + "'");
        r.input = patchComponentNamed(input);
        for (const auto& [layer, unit] : receivers)
            r.receivers.push_back({layer - 1, unit - 1});
        r.receiverHeadOnly = receiverHeadOnly;
        r.freezeMlps = freezeMlps;
        r.noising = noising;
        const bool one = py::isinstance<py::tuple>(sender) && py::len(sender) == 2 &&
                         py::isinstance<py::int_>(sender.cast<py::tuple>()[0]);
        if (!one)
            return pathPatchMap(r, sender);
        std::tie(r.senderLayer, r.senderHead) = sender.cast<std::pair<int, int>>();
        --r.senderLayer;
        --r.senderHead;
        PathPatchResult result;
        {
            py::gil_scoped_release free;
            result = attnscope::core::pathPatch(*m_loaded->model, r);
        }
        py::dict d;
        d["m_clean"] = result.clean;
        d["m_corrupt"] = result.corrupt;
        d["m_patched"] = result.patched;
        d["score"] = result.score;
        return d;
    }

private:
    // Path patching from every sender of `senders` ("all": every head before the first receiver; or (layer, head)s).
    py::dict pathPatchMap(const PathPatchRequest& r, const py::object& senders) const
    {
        std::vector<std::pair<int, int>> heads;
        if (py::isinstance<py::str>(senders)) {
            if (senders.cast<std::string>() != "all")
                throw Error(ErrorCode::BadInput, "sender must be (layer, head), a list of them or 'all'");
        } else {
            for (const auto& [layer, head] : senders.cast<std::vector<std::pair<int, int>>>())
                heads.emplace_back(layer - 1, head - 1);
            if (heads.empty())
                throw Error(ErrorCode::BadInput, "sender: an empty list names no sender head (use 'all' for every one)");
        }
        PatchResult result;
        {
            py::gil_scoped_release free;
            result = pathPatchSenders(*m_loaded->model, r, heads);
        }
        std::vector<py::ssize_t> shape(result.shape.begin(), result.shape.end());
        py::dict d;
        d["m_clean"] = result.clean;
        d["m_corrupt"] = result.corrupt;
        d["axes"] = result.axes;
        d["scores"] = ownedArray(std::vector<float>(result.scores.begin(), result.scores.end()), shape);
        return d;
    }

    std::vector<std::int32_t> promptOf(const py::object& p) const
    {
        if (py::isinstance<py::str>(p)) {
            if (!m_tokenizer)
                throw Error(ErrorCode::BadInput, "this model has no tokenizer: give prompts as id lists");
            return promptIds(*m_tokenizer, p.cast<std::string>());
        }
        return p.cast<std::vector<std::int32_t>>();
    }
    std::int32_t answerOf(const py::object& a) const
    {
        if (py::isinstance<py::int_>(a))
            return a.cast<std::int32_t>();
        if (!m_tokenizer)
            throw Error(ErrorCode::BadInput, "this model has no tokenizer: give answers as token ids");
        return answerToken(*m_tokenizer, a.cast<std::string>());
    }

    std::shared_ptr<LoadedModel> m_loaded;
    std::string m_spec;
    std::shared_ptr<Tokenizer> m_tokenizer;
    std::shared_ptr<Tokenizer> m_targetTokenizer; // an encoder-decoder model's target side (Marian's target.spm)
};

} // namespace

PYBIND11_MODULE(_attnscope, m)
{
    m.doc() = "attnscope's core: load a model, run a text, read its attention as numpy arrays.";
    static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const Error& e) {
            error(e.what());
        }
    });

    py::class_<Capture>(m, "Capture", "A text as the model ran it: tokens, and attention recomputed when asked.")
        .def_property_readonly("tokens", &Capture::tokens, "The tokens as the tokenizer spells them (list of str).")
        .def_property_readonly("ids", &Capture::ids, "The token ids (list of int).")
        .def_property_readonly("segments", &Capture::segments, "How many segments the text ran in.")
        .def_property_readonly("source_tokens", &Capture::sourceTokens,
                               "An encoder-decoder model's source tokens (list of str; empty for one stream). The\n"
                               "target is `tokens` / `ids`, its decoder start token first.")
        .def_property_readonly("source_ids", &Capture::sourceIds, "The source token ids (empty for one stream).")
        .def_property_readonly("text", &Capture::text,
                               "The text the tokens say: as run, and what the model wrote after it (a translation).")
        .def_property_readonly("written", &Capture::written,
                               "How many tokens at the end the model wrote (a greedy translation); the rest were given.")
        .def_property_readonly("sites", &Capture::sites,
                               "Every site where tokens read tokens: name ('self'; 'encoder', 'decoder', 'cross'), layer\n"
                               "(from 1 in its stack), label, the query and key streams, causal, mixer, heads.")
        .def("attention", &Capture::attention, py::arg("layer"), py::arg("head") = py::none(),
             py::arg("segment") = py::none(), py::arg("raw") = false, py::arg("site") = py::none(),
             "attention(layer, head=None, segment=None, raw=False, site=None) -> numpy.ndarray float32 [heads, q, k]\n\n"
             "The attention probabilities of layer `layer` (from 1) for every head, or head `head` (from 1) alone\n"
             "(shape [1, q, k]). Axis 0 is the head (index h is head h + 1), axis 1 the query token, axis 2 the key\n"
             "token (memory rows first for Transformer-XL). Masked keys are 0. raw=True gives the scores before the\n"
             "softmax (scaled by 1/sqrt(d_head); masked keys NaN). `segment` (from 1) when the text ran in several.\n"
             "`site` names which attention of an encoder-decoder model: 'encoder' (source x source, the default),\n"
             "'decoder' (target x target) or 'cross' (target rows x source columns); layers count within it.\n"
             "Computed when asked, read-only, and the array owns its memory.")
        .def("hidden_states", &Capture::hiddenStates, py::arg("segment") = py::none(),
             "hidden_states(segment=None) -> numpy.ndarray float32 [layers + 1, q, d_model]\n\n"
             "The residual stream: index 0 the embeddings (what layer 1 reads), index l the output of layer l\n"
             "(layers from 1). Axis 1 is the query token of the segment, axis 2 the model dimension. Recomputed\n"
             "when asked.")
        .def("logits", &Capture::logits, py::arg("segment") = py::none(),
             "logits(segment=None) -> numpy.ndarray float32 [q, vocab]\n\n"
             "The model head's logits at each token of the segment (a causal model's row i predicts token i + 1;\n"
             "an encoder's masked-language-model head predicts token i itself). Units: logits (before softmax).")
        .def("logit_lens", &Capture::logitLens, py::arg("segment") = py::none(),
             py::arg("k") = attnscope::core::kLensTopK,
             "logit_lens(segment=None, k=5) -> dict\n\n"
             "Every layer's output read out by the final norm and head. 'top': [layer][position] lists of (id,\n"
             "probability), most probable first, index 0 = layer 1 / the segment's first token; 'probability':\n"
             "numpy [layers, positions] of the token that actually comes next (causal) or stands there (encoders),\n"
             "NaN at the text's end; 'first_position': the token number (from 1) of column 0.")
        .def("atlas", &Capture::atlas,
             "atlas() -> dict of numpy.ndarray float32 [layers, heads]\n\n"
             "The head atlas of this text, as the app's Head Atlas tab and `attnscope-cli heads` compute it: one\n"
             "array per column (sink_rate, entropy, duplicate_token, induction, cls, previous, ...), index [l, h] =\n"
             "layer l + 1, head h + 1; NaN where a column does not apply (an encoder has no distance profiles).")
        .def("terms", &Capture::terms, py::arg("layer"), py::arg("head"), py::arg("segment") = py::none(),
             "terms(layer, head, segment=None) -> dict of numpy.ndarray float32 [q, k]\n\n"
             "One head's score split into the parts that add up to it, each alone: Transformer-XL's terms 'a' (content-\n"
             "content), 'b' (content-position), 'c' (global content bias), 'd' (global position bias); a rotary model's\n"
             "frequency bands ('high', 'middle', 'low' for three); DeepSeek's 'rotary' and 'content'. Scaled as the\n"
             "scores are and before any soft cap, so their sum is attention(layer, head, raw=True) (for a model with a\n"
             "soft cap, before it). Layer and head from 1; masked keys NaN.")
        .def("queries_keys", &Capture::queriesKeys, py::arg("layer"), py::arg("head"), py::arg("segment") = py::none(),
             "queries_keys(layer, head, segment=None) -> dict\n\n"
             "One head's vectors as its scores use them (rotated for rotary models, after any q/k norm; a grouped\n"
             "model's key/value group): 'queries' numpy [q, d_head], 'keys' numpy [k, d_head] (Transformer-XL: the\n"
             "content keys of term (a)), 'query_tokens' / 'key_tokens': each row's index into cap.tokens (from 0).\n"
             "queries @ keys.T times 1/sqrt(d_head) is the raw score where no term is added.")
        .def("explain", &Capture::explain, py::arg("layer"), py::arg("head"), py::arg("position"),
             "explain(layer, head, position) -> dict\n\n"
             "How head `head` of layer `layer` computes the row of the token at `position` (all from 1): 'query'\n"
             "[d_head] and 'keys' [k, d_head] as scored, 'scores' [k] (scaled, soft-capped, NaN where masked), 'scale',\n"
             "'soft_cap' (0: none), 'sink' (gpt-oss's learned sink logit, else None), 'probs' [k] (the softmax: the\n"
             "grid's row), 'values' [k, d_value] and 'output' [d_value] (sum of probs times values, the head's part\n"
             "before the output projection; None where the family does not expose them), 'kv_head' (from 1: the\n"
             "key/value head this query head shares), 'key_tokens' (each key's index into cap.tokens, from 0).")
        .def("rollout", &Capture::rollout, py::arg("segment") = py::none(),
             "rollout(segment=None) -> numpy.ndarray float32 [q, k]\n\n"
             "Attention rollout (Abnar and Zuidema 2020): per layer 0.5 * mean over heads + 0.5 * identity, rows\n"
             "renormalised, multiplied through the layers. Row i: how much each token feeds position i's output.\n"
             "Not for a segment that sees memory (Transformer-XL).")
        .def("ablation", &Capture::ablation,
             "ablation() -> dict\n\n"
             "Every head zeroed in turn before its layer's output projection, the text's mean next-token loss (nats)\n"
             "measured each time: 'base_loss' (intact), 'loss' and 'change' (loss - base_loss) as numpy [layers,\n"
             "heads] (index [l, h] = layer l + 1, head h + 1), 'predictions' averaged. One forward per head.")
        .def("qk_embedding", &Capture::qkEmbedding, py::arg("layer"), py::arg("head"), py::arg("method") = "pca",
             py::arg("segment") = py::none(), py::arg("seed") = 1,
             "qk_embedding(layer, head, method='pca', segment=None, seed=1) -> dict\n\n"
             "One head's queries and keys in 2-D so that near means a high dot product (AttentionViz: keys shifted to\n"
             "the queries' mean and both scaled to equal mean norms, neither changing a softmax), by 'pca', 'tsne' or\n"
             "'umap'. 'x', 'y': numpy [queries + keys], queries first; 'tokens': each point's index into cap.tokens\n"
             "(Transformer-XL's position part: distances); 'correlation': how far closeness stands for q.k.")
        .def("save_session", &Capture::saveSession, py::arg("path"), py::arg("layer") = 1, py::arg("head") = 1,
             "save_session(path, layer=1, head=1) -> str\n\n"
             "Writes a session file (.attnscope, added when the path has no extension) that the desktop app opens\n"
             "on this model, this text and this layer and head (both from 1): `attnscope FILE`. Returns the path.\n"
             "A capture run from ids saves them as the tokenizer spells them back.")
        .def("html", &Capture::html, py::arg("layers") = py::none(), py::arg("heads") = py::none(),
             "html(layers=None, heads=None) -> str\n\n"
             "A self-contained interactive page (grid, head and layer selector, the text shaded by attention):\n"
             "one file, nothing fetched, opens offline in any browser. Layers and heads from 1 (None: all).\n"
             "Write it with open('page.html', 'w').write(cap.html([1, 2])).")
        .def("_repr_html_", [](const Capture& c) { return inFrame(c.html(std::vector<int>{1}, std::nullopt)); });

    py::class_<Scan>(m, "Scan", "A corpus scan's result: attention by relative distance, per layer and head.")
        .def_property_readonly("profiles", &Scan::profiles, "The profiles it holds ('full' first, 'term_a', 'band_1', ...).")
        .def_property_readonly("tokens", &Scan::tokens, "Tokens scanned.")
        .def_property_readonly("partial", &Scan::partial, "True when the scan was stopped before the end.")
        .def_property_readonly("metadata", &Scan::metadata, "What the scan ran on (corpus, shard, options).")
        .def("profile", &Scan::profile, py::arg("name") = "full",
             "profile(name='full') -> numpy.ndarray float32 [layers, heads, distances]\n\n"
             "Mean attention at each relative distance (index d = d tokens back, 0 = the token itself), per layer and\n"
             "head (index 0 = layer 1 / head 1); 0 where no query saw that distance.")
        .def("count", &Scan::count, "count() -> numpy [distances]: (query, key) pairs seen at each distance.")
        .def("heads", &Scan::heads, py::arg("profile") = "full",
             "heads(profile='full') -> dict of numpy.ndarray float32 [layers, heads]\n\n"
             "Each head's summary of a profile: entropy (nats), mean_distance and span (tokens), mass_near_5,\n"
             "mass_near_50, previous_token, query_entropy, attended_distance, first_key_mass, sink_rate (NaN where\n"
             "the result does not hold the statistic).")
        .def("save", &Scan::save, py::arg("path"),
             "save(path): the result as the app and `attnscope-cli merge` read it (safetensors, written atomically).");
    m.def("load_scan", [](const std::string& path) { return Scan(ScanResult::load(path)); }, py::arg("path"),
          "load_scan(path) -> Scan: a scan result saved by Scan.save, the app or `attnscope-cli scan`.");
    m.def("merge_scans", [](const std::vector<std::string>& paths) { return Scan(mergeScanFiles(paths)); },
          py::arg("paths"),
          "merge_scans(paths) -> Scan: scan results merged exactly (sums and counts add). Shards of one file must\n"
          "be all n of them, each once; a missing or repeated shard is named.");


    py::class_<Model>(m, "Model", "A loaded model (weights memory-mapped as stored).")
        .def(py::init<const std::string&>(), py::arg("path"))
        .def_property_readonly("info", &Model::info,
                               "dict: family, source, layers, heads, kv_heads, d_model, d_head, vocab_size, weights, soft_cap "
                               "(a vision-language model: picture_token, picture_tokens)")
        .def_property_readonly("has_tokenizer", &Model::hasTokenizer)
        .def("run", &Model::run, py::arg("text") = py::none(), py::kw_only(), py::arg("ids") = py::none(),
             py::arg("segment_length") = py::none(), py::arg("mem_len") = py::none(), py::arg("target") = py::none(),
             py::arg("target_ids") = py::none(), py::arg("max_new_tokens") = 32, py::arg("image") = py::none(),
             py::arg("pixel_values") = py::none(), py::arg("token_type_ids") = py::none(),
             py::arg("attention_mask") = py::none(), py::arg("same_length") = py::none(),
             py::arg("clamp_len") = py::none(), py::arg("images") = py::none(), py::arg("audio") = py::none(),
             "run(text=None, *, ids=None, segment_length=None, mem_len=None, target=None, target_ids=None,\n"
             "    max_new_tokens=32, image=None, pixel_values=None, token_type_ids=None, attention_mask=None,\n"
             "    same_length=None, clamp_len=None, images=None, audio=None) -> Capture\n\n"
             "Runs a text (tokenized as the app does: the tokenizer's special tokens added) or token ids, and\n"
             "returns a Capture that keeps the queries and keys (probabilities computed when attention() asks).\n"
             "An encoder-decoder model (T5, BART, Marian): the text or ids are the source; `target` (a text) or\n"
             "`target_ids` (the decoder's input, its start token first) are read by teacher forcing, and without\n"
             "them the model translates greedily up to max_new_tokens; the Capture's tokens are the target, its\n"
             "source_tokens the source, and attention(layer, site=...) every site. A vision model:\n"
             "image='file.png' (preprocessed as the model folder says) or pixel_values [3, H, W]; returns a\n"
             "Capture whose tokens are CLS, registers and patches (r3c5: row 3, column 5). A vision-language model\n"
             "(LLaVA): text or ids with images=['file.png'] (or image=): the prompt's <image> placeholder (put where\n"
             "the text starts when it has none) expanded to the picture's tokens, every decoder layer a site. A speech\n"
             "model (Whisper): audio='file.wav' with the transcript as ids (from <|startoftranscript|>, or text tokens\n"
             "after the prompt) or a text, or without them the model's greedy transcription (max_new_tokens); the\n"
             "Capture's tokens are the transcript, attention(layer, site='encoder'|'decoder'|'cross') every site. With ids, an encoder takes\n"
             "token_type_ids (sentence A 0, B 1) and attention_mask (0: padding no query sees), and Transformer-XL\n"
             "same_length and clamp_len, as a reference's input.json gives them.")
        .def("predict", &Model::predict, py::arg("prompt"), py::arg("k") = 10,
             "predict(prompt, k=10) -> list\n\n"
             "A causal model: the k most probable next tokens after the prompt (a text or an id list), each a dict\n"
             "{id, token, probability}, most probable first. An encoder: one such list per mask token of the\n"
             "prompt, left to right.")
        .def("generate", &Model::generate, py::arg("prompt"), py::arg("tokens") = 20, py::kw_only(),
             py::arg("temperature") = 0.0, py::arg("top_k") = 0, py::arg("top_p") = 1.0, py::arg("seed") = 0,
             py::arg("allow_special") = false,
             "generate(prompt, tokens=20, *, temperature=0.0, top_k=0, top_p=1.0, seed=0, allow_special=False) -> dict\n\n"
             "New tokens after the prompt through the key/value cache: greedy at temperature 0, else sampled\n"
             "(repeatable for a seed). Control tokens (<unk>, <eos>, ...) are never chosen unless allow_special.\n"
             "Returns ids (the new ones), probabilities (each at the temperature) and text (what they add).")
        .def("scan", &Model::scan, py::arg("text") = py::none(), py::kw_only(), py::arg("text_file") = py::none(),
             py::arg("mem_len") = py::none(), py::arg("segment_length") = py::none(), py::arg("max_tokens") = -1,
             py::arg("terms") = "", py::arg("shard") = py::none(),
             "scan(text=None, *, text_file=None, mem_len=None, segment_length=None, max_tokens=-1, terms='',\n"
             "     shard=None) -> Scan\n\n"
             "A corpus scan (the Transformer-XL paper's Figs. 5 and 7, sinks, the atlas's profile columns) of a text\n"
             "or a text file streamed line by line. Unset options take the model's defaults (as the app and\n"
             "`attnscope-cli scan`). terms: extra profiles, 'a,b,d' / 'a+b' (Transformer-XL) or '1,2,3' (rotary\n"
             "bands). shard=(i, n), from 1: the i-th of n parts of the file, for a cluster; merge_scans joins them.")
        .def("patch", &Model::patch, py::arg("clean"), py::arg("corrupt"), py::arg("answer"), py::arg("wrong"),
             py::arg("component") = "head-out", py::arg("per_position") = false, py::arg("noising") = false,
             "patch(clean, corrupt, answer, wrong, component='head-out', per_position=False, noising=False) -> dict\n\n"
             "Activation patching (decoders). Prompts as texts or id lists of the same length; answers as ids or\n"
             "one-token words; the metric is logit[answer] - logit[wrong] at the last position. Returns m_clean,\n"
             "m_corrupt, axes (e.g. ['layer', 'head']) and scores (numpy, index 0 = layer 1 / head 1 / position 1):\n"
             "(m_patched - m_corrupt) / (m_clean - m_corrupt). component: head-out, q, k, v, pattern or resid.")
        .def("path_patch", &Model::pathPatch, py::arg("clean"), py::arg("corrupt"), py::arg("answer"), py::arg("wrong"),
             py::arg("sender"), py::arg("receivers"), py::arg("input") = "q", py::arg("receiver_head_only") = false,
             py::arg("freeze_mlps") = false, py::arg("noising") = false,
             "path_patch(clean, corrupt, answer, wrong, sender, receivers, input='q', receiver_head_only=False,\n"
             "           freeze_mlps=False, noising=False) -> dict\n\n"
             "Path patching (decoders): the sender head (layer, head), its output from the other prompt, reaches only\n"
             "the receivers' input ('q', 'k' or 'v'); receivers a list of (layer, head), or (layer, key/value group)\n"
             "for k and v of a grouped model unless receiver_head_only. Every other head is frozen; the MLPs between\n"
             "are recomputed (Wang et al.) or, with freeze_mlps, frozen too (the strict direct path). Returns\n"
             "m_clean, m_corrupt, m_patched and score = (m_patched - m_corrupt) / (m_clean - m_corrupt).\n"
             "sender='all' (every head of every layer before the first receiver) or a list of (layer, head): the map\n"
             "instead, m_clean, m_corrupt, axes ['layer', 'head'] and scores (numpy [layers, heads], NaN where a head\n"
             "is no sender), each cell the score of that sender alone (the plain runs made once).");
}
