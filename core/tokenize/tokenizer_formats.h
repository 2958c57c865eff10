// Readers of the subword tokenizer formats, each producing the one PipelineTokenizer pipeline:
//   tokenizer.json (Hugging Face: BPE or WordPiece), vocab.json + merges.txt (GPT-2), tokenizer.model (SentencePiece
//   BPE protobuf), BERT's vocab.txt, and the vocabularies inside GGUF files (tokenizer.ggml.model "gpt2" or "llama").
// Every file is validated with messages naming the file and the key (or protobuf field).
#pragma once

#include "tokenize/pipeline_tokenizer.h"

#include <memory>
#include <string>

namespace attnscope::core {

class GgufFile;

std::unique_ptr<PipelineTokenizer> tokenizerFromJson(const std::string& path);
std::unique_ptr<PipelineTokenizer> tokenizerFromGpt2Files(const std::string& vocabJson, const std::string& mergesTxt);
std::unique_ptr<PipelineTokenizer> tokenizerFromSentencePiece(const std::string& modelPath);
std::unique_ptr<PipelineTokenizer> tokenizerFromGguf(const GgufFile& file);
// BERT's vocab.txt (one piece per line, line number = id) as BertTokenizer reads it: BertNormalizer with the options of
// tokenizer_config.json beside it (do_lower_case, strip_accents, tokenize_chinese_chars), BertPreTokenizer, WordPiece
// with "##" and [UNK], [CLS] A [SEP] (B [SEP]).
std::unique_ptr<PipelineTokenizer> tokenizerFromWordPieceVocab(const std::string& vocabTxt);

} // namespace attnscope::core
