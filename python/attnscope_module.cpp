// The Python module's C++ side (_attnscope): models, captures and their attention as numpy arrays, over the core.
// Numbering as people read it: layers and heads from 1 in every argument; array axes from 0 as numpy's always are.
// Arrays own their memory (no copy out of the computation, read-only), so they outlive the model they came from.
#include "analysis/activation_patching.h"
#include "builtin_paths.h"
#include "model/model_loader.h"
#include "run/attention_page.h"
#include "run/patch_prompts.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace attnscope::core;

namespace {

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

class Model;

class Capture {
public:
    Capture(std::shared_ptr<const LoadedModel> model, std::shared_ptr<const TextCapture> capture)
        : m_model(std::move(model))
        , m_capture(std::move(capture))
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
        std::vector<std::int32_t> out;
        for (const auto& t : m_capture->tokens)
            out.push_back(t.id);
        return out;
    }
    int segments() const { return static_cast<int>(m_capture->segments.size()); }

    // [heads, q, k] (one head: [1, q, k]) of a segment; masked keys 0 (probabilities) or NaN (raw scores).
    py::array_t<float> attention(int layer, std::optional<int> head, std::optional<int> segment, bool raw) const
    {
        const auto& info = m_capture->model;
        if (layer < 1 || layer > info.layers)
            throw Error(ErrorCode::BadInput, "layer " + std::to_string(layer) + " does not exist: layers are 1 .. " +
                                                 std::to_string(info.layers));
        if (head && (*head < 1 || *head > info.heads))
            throw Error(ErrorCode::BadInput, "head " + std::to_string(*head) + " does not exist: heads are 1 .. " +
                                                 std::to_string(info.heads));
        const int segs = segments();
        int s = segs - 1;
        if (segment) {
            if (*segment < 1 || *segment > segs)
                throw Error(ErrorCode::BadInput, "segment " + std::to_string(*segment) + " does not exist: segments are 1 .. " +
                                                     std::to_string(segs));
            s = *segment - 1;
        } else if (segs > 1) {
            throw Error(ErrorCode::BadInput, "the text ran in " + std::to_string(segs) + " segments: say which (segment=1 .. " +
                                                 std::to_string(segs) + ")");
        }
        // The layer's probabilities as the forward pass computes them (the numbers `attnscope-cli dump` writes): the
        // segment run again from the capture's kept state, stopped once the layer is done.
        struct Keep final : AttentionObserver {
            int layer = 0;
            bool raw = false;
            StopToken* stop = nullptr;
            std::vector<float> values;
            py::ssize_t heads = 0, q = 0, k = 0;
            bool wantScores() const override { return raw; }
            void onLayer(const LayerView& v) override
            {
                if (v.layer != layer)
                    return;
                heads = v.heads;
                q = v.qlen;
                k = v.klen;
                const float* src = raw ? v.scores : v.attnProb;
                if (!src)
                    throw Error(ErrorCode::BadInput, "this model gives no raw scores");
                values.assign(src, src + static_cast<std::size_t>(heads * q * k));
                if (raw) // masked keys: NaN, not the forward's 0
                    for (py::ssize_t h = 0; h < heads; ++h)
                        for (py::ssize_t i = 0; i < q * k; ++i)
                            if (v.mask[i])
                                values[static_cast<std::size_t>(h * q * k + i)] = std::nanf("");
                stop->requestStop();
            }
        } keep;
        StopToken stop;
        keep.layer = layer - 1;
        keep.raw = raw;
        keep.stop = &stop;
        {
            py::gil_scoped_release free;
            try {
                rerunSegment(*m_model->model, *m_capture, s, keep, &stop);
            } catch (const Error& e) {
                if (e.code() != ErrorCode::Cancelled || keep.values.empty())
                    throw;
            }
        }
        if (head) {
            const auto per = static_cast<std::size_t>(keep.q * keep.k);
            std::vector<float> one(keep.values.begin() + static_cast<std::ptrdiff_t>(per) * (*head - 1),
                                   keep.values.begin() + static_cast<std::ptrdiff_t>(per) * *head);
            return ownedArray(std::move(one), {1, keep.q, keep.k});
        }
        return ownedArray(std::move(keep.values), {keep.heads, keep.q, keep.k});
    }

    // The self-contained page (run/attention_page.h) of these layers and heads (from 1; None: all).
    std::string html(std::optional<std::vector<int>> layers, std::optional<std::vector<int>> heads) const
    {
        PageOptions o;
        for (int l : layers.value_or(std::vector<int>{}))
            o.layers.push_back(l - 1);
        for (int h : heads.value_or(std::vector<int>{}))
            o.heads.push_back(h - 1);
        return attentionPageHtml(*m_capture, m_model->model->info().source, o);
    }

private:
    std::shared_ptr<const LoadedModel> m_model; // keeps the weights mapped while the capture lives
    std::shared_ptr<const TextCapture> m_capture;
};

class Model {
public:
    explicit Model(const std::string& spec)
        : m_loaded(std::make_shared<LoadedModel>(loadModel(spec, attnscope::builtinModelDirs(""))))
    {
        try {
            m_tokenizer = std::shared_ptr<Tokenizer>(loadModelTokenizer(*m_loaded).release());
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
        return d;
    }
    bool hasTokenizer() const { return static_cast<bool>(m_tokenizer); }

    Capture run(std::optional<std::string> text, std::optional<std::vector<std::int32_t>> ids,
                std::optional<int> segmentLength, std::optional<int> memLength) const
    {
        if (text.has_value() == ids.has_value())
            throw Error(ErrorCode::BadInput, "give run() a text or ids=[...], one of them");
        CaptureOptions o;
        if (segmentLength)
            o.segmentLen = *segmentLength;
        if (memLength)
            o.run.memLen = *memLength;
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
        return Capture(m_loaded, capture);
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

private:
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
    std::shared_ptr<Tokenizer> m_tokenizer;
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
        .def("attention", &Capture::attention, py::arg("layer"), py::arg("head") = py::none(),
             py::arg("segment") = py::none(), py::arg("raw") = false,
             "attention(layer, head=None, segment=None, raw=False) -> numpy.ndarray float32 [heads, q, k]\n\n"
             "The attention probabilities of layer `layer` (from 1) for every head, or head `head` (from 1) alone\n"
             "(shape [1, q, k]). Axis 0 is the head (index h is head h + 1), axis 1 the query token, axis 2 the key\n"
             "token (memory rows first for Transformer-XL). Masked keys are 0. raw=True gives the scores before the\n"
             "softmax (scaled by 1/sqrt(d_head); masked keys NaN). `segment` (from 1) when the text ran in several.\n"
             "Computed when asked, read-only, and the array owns its memory.")
        .def("html", &Capture::html, py::arg("layers") = py::none(), py::arg("heads") = py::none(),
             "html(layers=None, heads=None) -> str\n\n"
             "A self-contained interactive page (grid, head and layer selector, the text shaded by attention):\n"
             "one file, nothing fetched, opens offline in any browser. Layers and heads from 1 (None: all).\n"
             "Write it with open('page.html', 'w').write(cap.html([1, 2])).")
        .def("_repr_html_", [](const Capture& c) {
            // Jupyter: the same page in a frame of its own, so its script runs and its styles stay inside.
            std::string page = c.html(std::vector<int>{1}, std::nullopt), quoted;
            for (char ch : page)
                quoted += ch == '&' ? std::string("&amp;") : ch == '"' ? std::string("&quot;") : std::string(1, ch);
            return "<iframe style=\"width: 100%; height: 680px; border: 0\" srcdoc=\"" + quoted + "\"></iframe>";
        });

    py::class_<Model>(m, "Model", "A loaded model (weights memory-mapped as stored).")
        .def(py::init<const std::string&>(), py::arg("path"))
        .def_property_readonly("info", &Model::info,
                               "dict: family, source, layers, heads, kv_heads, d_model, d_head, vocab_size, weights")
        .def_property_readonly("has_tokenizer", &Model::hasTokenizer)
        .def("run", &Model::run, py::arg("text") = py::none(), py::kw_only(), py::arg("ids") = py::none(),
             py::arg("segment_length") = py::none(), py::arg("mem_len") = py::none(),
             "run(text=None, *, ids=None, segment_length=None, mem_len=None) -> Capture\n\n"
             "Runs a text (tokenized as the app does: the tokenizer's special tokens added) or token ids.\n"
             "Keeps the queries and keys; probabilities are computed when Capture.attention asks.")
        .def("patch", &Model::patch, py::arg("clean"), py::arg("corrupt"), py::arg("answer"), py::arg("wrong"),
             py::arg("component") = "head-out", py::arg("per_position") = false, py::arg("noising") = false,
             "patch(clean, corrupt, answer, wrong, component='head-out', per_position=False, noising=False) -> dict\n\n"
             "Activation patching (decoders). Prompts as texts or id lists of the same length; answers as ids or\n"
             "one-token words; the metric is logit[answer] - logit[wrong] at the last position. Returns m_clean,\n"
             "m_corrupt, axes (e.g. ['layer', 'head']) and scores (numpy, index 0 = layer 1 / head 1 / position 1):\n"
             "(m_patched - m_corrupt) / (m_clean - m_corrupt). component: head-out, q, k, v, pattern or resid.");
}
