// Memorix's own rules-mode formation over every speaker turn of LoCoMo
// conversations, as memform's memorix profile sees them (datasets/README.md,
// "Observations": narrative = the turn, entity = the speaker, title = its
// first sentence of 15+ characters cut to 60, declared type `discovery`,
// which Memorix's type check may correct). No store: the search finds
// nothing and nothing is written, as in the 0.385 s figure.
// `node locomo_bench.mjs FILE.json...`; prints turns and milliseconds.
import { readFileSync } from "node:fs";
import { loadFormation } from "./formation.mjs";

const t0 = performance.now();
const runFormation = await loadFormation();
const config = (names) => ({ mode: "active", useLLM: false, getEntityNames: () => names, searchMemories: async () => [], getObservation: () => null });
let turns = 0;
for (const path of process.argv.slice(2)) {
  const c = JSON.parse(readFileSync(path, "utf8"));
  const conv = c.conversation ?? c;
  const names = [conv.speaker_a, conv.speaker_b];
  const sessions = Object.keys(conv).filter((k) => /^session_\d+$/.test(k)).sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
  for (const s of sessions) {
    for (const t of conv[s]) {
      if (!t.text || !t.text.trim() || !names.includes(t.speaker)) continue;
      const sentence = t.text.split(/[.。!！?\n]/).map((x) => x.trim()).find((x) => x.length >= 15);
      const title = (sentence ?? t.text.trim()).slice(0, 60);
      await runFormation({ title, narrative: t.text, facts: [], entityName: t.speaker, type: "discovery", projectId: "locomo", source: "explicit" }, config(names));
      turns++;
    }
  }
}
console.log(JSON.stringify({ turns, ms: performance.now() - t0 }));
