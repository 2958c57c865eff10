// Readers of the BPE tokenizer formats, each producing the one BpeTokenizer pipeline:
//   tokenizer.json (Hugging Face), vocab.json + merges.txt (GPT-2), tokenizer.model (SentencePiece BPE protobuf),
//   and the vocabularies inside GGUF files (tokenizer.ggml.model "gpt2" or "llama").
// Every file is validated with messages naming the file and the key (or protobuf field).
#pragma once

#include "tokenize/bpe_tokenizer.h"

#include <memory>
#include <string>

namespace attnscope::core {

class GgufFile;

std::unique_ptr<BpeTokenizer> tokenizerFromJson(const std::string& path);
std::unique_ptr<BpeTokenizer> tokenizerFromGpt2Files(const std::string& vocabJson, const std::string& mergesTxt);
std::unique_ptr<BpeTokenizer> tokenizerFromSentencePiece(const std::string& modelPath);
std::unique_ptr<BpeTokenizer> tokenizerFromGguf(const GgufFile& file);

} // namespace attnscope::core
