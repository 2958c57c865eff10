// Reference ids from Hugging Face's Rust tokenizers library (npm `tokenizers`, its Node binding).
const { Tokenizer } = require("tokenizers");
const fs = require("fs");
const [tokFile, textsFile, outFile] = process.argv.slice(2);
(async () => {
  const tok = Tokenizer.fromFile(tokFile);
  const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));
  const lines = [];
  for (const text of texts) {
    const a = await tok.encode(text, null, { addSpecialTokens: false });
    const b = await tok.encode(text, null, { addSpecialTokens: true });
    lines.push(JSON.stringify({ text, ids: Array.from(a.getIds()), ids_with_special: Array.from(b.getIds()) }));
  }
  fs.writeFileSync(outFile, "[\n" + lines.join(",\n") + "\n]\n");
  console.log(outFile, texts.length);
})();
