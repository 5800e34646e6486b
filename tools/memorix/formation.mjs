// Loads Memorix's own formation code (Extract, Resolve, Evaluate and
// runFormation) from the installed memorix@1.0.7 package, unmodified.
//
// The package is one bundle whose entry point starts an MCP server on stdio
// when imported, and it does not export runFormation. So this reads the
// bundle, keeps its module prelude (the bundler's helpers) and the four
// sections the bundler marks `// src/memory/formation/*.ts`, and imports
// them as a module of their own: the code that runs is the package's, byte
// for byte; only the server start-up is left out. The package is checked
// to be version 1.0.7 and every marker to be found, or this fails.
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { join, dirname } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, "node_modules", "memorix");

export const VERSION = "1.0.7";

export async function loadFormation() {
  let pkg;
  try {
    pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  } catch (e) {
    throw new Error(`memorix is not installed in ${pkgDir} (run \`make memorix\`): ${e.message}`);
  }
  if (pkg.version !== VERSION) throw new Error(`memorix ${pkg.version} installed, ${VERSION} expected (run \`make memorix\`)`);
  const bundle = readFileSync(join(pkgDir, "dist", "index.js"), "utf8");
  const cut = (from, to) => {
    const a = bundle.indexOf(from);
    const b = bundle.indexOf(to, a + 1);
    if (a < 0 || b < 0) throw new Error(`memorix ${VERSION}: section marker not found: ${a < 0 ? from : to}`);
    return bundle.slice(a, b);
  };
  const prelude = bundle.slice(0, bundle.indexOf("// src/store/sqlite-db.ts"));
  if (!prelude.includes("var __esm")) throw new Error("memorix bundle: prelude not found");
  const formation = cut("// src/memory/formation/extract.ts", "// src/config/behavior.ts");
  const dir = mkdtempSync(join(tmpdir(), "memorix-formation-"));
  const file = join(dir, "formation.mjs");
  writeFileSync(file, `${prelude}\n${formation}\nexport { init_formation, runFormation };\n`);
  const mod = await import(pathToFileURL(file).href);
  mod.init_formation();
  return mod.runFormation;
}

// Memorix's hit shape from memform's: facts as one string, one per line.
export function toHit(h) {
  return { id: h.id, observationId: h.id, title: h.title, narrative: h.narrative, facts: h.facts.join("\n"), entityName: h.entity_name, type: "", score: h.score };
}

// runFormation's config: the entity names and hits memform's run saw.
export function config(entityNames, hits) {
  const byId = new Map(hits.map((h) => [h.id, h]));
  return {
    mode: "active",
    useLLM: false,
    getEntityNames: () => entityNames,
    searchMemories: async () => hits.map(toHit),
    getObservation: (id) => {
      const h = byId.get(id);
      return h ? { id, entityName: h.entity_name, type: "", title: h.title, narrative: h.narrative, facts: h.facts } : null;
    },
  };
}
