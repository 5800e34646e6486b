// memform's differential test, Memorix's side: `node differential.mjs CASES OUT`.
// CASES is a JSON list of {id, input: {title, narrative, facts, entityName,
// type}, entityNames, hits} written by memform's test; each case runs
// through the real runFormation (rules mode) with the same entity names and
// search hits memform saw, and OUT gets Memorix's answers, one per case.
import { readFileSync, writeFileSync } from "node:fs";
import { loadFormation, config } from "./formation.mjs";

const [casesPath, outPath] = process.argv.slice(2);
if (!casesPath || !outPath) {
  console.error("usage: node differential.mjs CASES.json OUT.json");
  process.exit(2);
}
const runFormation = await loadFormation();
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const out = [];
for (const c of cases) {
  const input = { ...c.input, projectId: "memform", source: "explicit" };
  const f = await runFormation(input, config(c.entityNames, c.hits));
  out.push({
    id: c.id,
    title: f.title,
    titleImproved: f.extraction.titleImproved,
    type: f.type,
    typeCorrected: f.extraction.typeCorrected,
    entityName: f.entityName,
    extractedFacts: f.extraction.extractedFacts,
    action: f.resolution.action,
    targetId: f.resolution.targetId ?? null,
    score: f.evaluation.score,
    category: f.evaluation.category,
  });
}
writeFileSync(outPath, JSON.stringify(out, null, 1));
