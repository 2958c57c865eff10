// Llama 2's tokenizer.json with Phi-3's added tokens (as Phi-3's tokenizer_config.json lists them).
const fs = require("fs");
const [llama2, added, out] = process.argv.slice(2);
const tok = JSON.parse(fs.readFileSync(llama2, "utf8"));
const extra = JSON.parse(fs.readFileSync(added, "utf8"));
const byId = new Map(tok.added_tokens.map((t) => [t.id, t]));
for (const t of extra) byId.set(t.id, t);
tok.added_tokens = [...byId.values()].sort((a, b) => a.id - b.id);
fs.writeFileSync(out, JSON.stringify(tok));
