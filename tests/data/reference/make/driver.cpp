// Own small driver over llama.cpp's public API: one llama_decode of all tokens, every graph tensor copied by name
// through the eval callback, logits of every position. Output: a flat file of (name, type, ne[4], float32 data).
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

struct Captured {
    std::vector<int64_t> ne;
    std::vector<float> data;
};
static std::map<std::string, Captured> g_tensors;

static bool callback(struct ggml_tensor* t, bool ask, void*)
{
    if (ask)
        return true;
    if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_I32)
        return true;
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    Captured c;
    c.ne.assign(t->ne, t->ne + 4);
    const int64_t n = ggml_nelements(t);
    c.data.resize(n);
    // strided copy (views may be non-contiguous); raw holds nbytes starting at the view's first element
    int64_t k = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    const size_t off = i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
                    if (off + 4 > raw.size()) {
                        return true; // not readable as a simple strided view: skip
                    }
                    if (t->type == GGML_TYPE_F32) {
                        float v;
                        std::memcpy(&v, raw.data() + off, 4);
                        c.data[k++] = v;
                    } else {
                        int32_t v;
                        std::memcpy(&v, raw.data() + off, 4);
                        c.data[k++] = static_cast<float>(v);
                    }
                }
    g_tensors[t->name] = std::move(c);
    return true;
}

int main(int argc, char** argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: driver model.gguf out.bin id id ...\n");
        return 2;
    }
    std::vector<llama_token> ids;
    for (int i = 3; i < argc; ++i)
        ids.push_back(std::atoi(argv[i]));
    ggml_backend_load_all();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model)
        return 1;
    auto cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.swa_full = true;
    cp.cb_eval = callback;
    cp.cb_eval_user_data = nullptr;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return 1;
    const int T = static_cast<int>(ids.size());
    llama_batch batch = llama_batch_init(T, 0, 1);
    for (int i = 0; i < T; ++i) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = T;
    if (llama_decode(ctx, batch) != 0)
        return 1;
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    Captured logits;
    logits.ne = {nv, T, 1, 1};
    for (int i = 0; i < T; ++i) {
        const float* l = llama_get_logits_ith(ctx, i);
        logits.data.insert(logits.data.end(), l, l + nv);
    }
    g_tensors["logits"] = logits;
    const std::string path = argv[2], tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    for (const auto& [name, c] : g_tensors) {
        const uint32_t len = static_cast<uint32_t>(name.size());
        out.write(reinterpret_cast<const char*>(&len), 4);
        out.write(name.data(), len);
        out.write(reinterpret_cast<const char*>(c.ne.data()), 4 * sizeof(int64_t));
        out.write(reinterpret_cast<const char*>(c.data.data()), static_cast<std::streamsize>(c.data.size() * 4));
    }
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "could not write %s\n", path.c_str());
        return 1;
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    std::printf("%zu tensors\n", g_tensors.size());
    return 0;
}
