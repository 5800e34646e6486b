//! The `dreaming` profile on the bundled `datasets/dreaming` conversations:
//! a pass after every episode, and a snapshot of the graph after each pass
//! (the ontology: entities, aspects, claims with their status, links; the
//! pass records), in rules mode and with the gold dreamer.

use std::fmt::Write as _;

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::dreaming::profile::dream_episode;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::store::Store;

use crate::support::{root, snapshots_dir};

const CONVERSATIONS: [&str; 2] = ["garden-club", "harbor-move"];

fn render(id: &str, dreamer: &str) -> String {
    let dataset = memform::dataset::load(&root().join("datasets/dreaming")).unwrap();
    let conv = dataset.conversations.iter().find(|c| c.id == id).unwrap();
    let mut cfg = Config::default();
    cfg.profile = "dreaming".into();
    cfg.dreaming.dreamer = dreamer.into();
    cfg.dreaming.every_episodes = 1;
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let store = Store::in_memory().unwrap();
    store.write_conversation(&conv.id, &conv.speakers, &[]).unwrap();
    store.write_evidence_from(&conv.id, 0, &conv.episodes).unwrap();
    let mut out = String::new();
    let mut seen = 0;
    for episode in &conv.episodes {
        dream_episode(stages, conv, episode, &cfg, &store).unwrap();
        let passes = store.dream_passes(Some(&conv.id)).unwrap();
        for p in &passes[seen..] {
            let _ = writeln!(
                out,
                "== after {}: pass {} ({}, {}): {} calls, {} applied, {} skipped, {} failed; {} turns consumed, {} remaining; watermark {:?} -> {:?}",
                p.after_episode,
                p.id,
                p.mode,
                p.trigger,
                p.tool_calls,
                p.ops_applied,
                p.ops_skipped,
                p.ops_failed,
                p.evidence_consumed,
                p.evidence_remaining,
                p.watermark_before,
                p.watermark_after
            );
        }
        seen = passes.len();
        let view = store.ontology_view(&conv.id).unwrap();
        let name = |id: &str| view.entities.iter().find(|e| e.id == id).map(|e| e.name.clone()).unwrap_or_else(|| id.to_string());
        for e in &view.entities {
            let _ = writeln!(out, "entity {} {} ({}){}", e.id, e.name, e.entity_type, if e.active { "" } else { " archived" });
        }
        for a in &view.aspects {
            let _ = writeln!(out, "aspect {} {} / {} ({})", a.id, name(&a.entity_id), a.name, a.cardinality.as_str());
        }
        for c in &view.claims {
            let by = c.superseded_by.as_deref().map(|s| format!(" by {s}")).unwrap_or_default();
            let _ = writeln!(out, "claim {} [{}{}] {}: {:?}", c.id, c.status.as_str(), by, c.claim_key, c.content);
        }
        for l in &view.links {
            let _ = writeln!(out, "link {} {} -{}-> {}", l.id, name(&l.source_entity_id), l.link_type, name(&l.target_entity_id));
        }
        if !view.resolved_attention.is_empty() {
            let _ = writeln!(out, "attention declined: {}", view.resolved_attention.join(", "));
        }
    }
    let _ = writeln!(out, "== operations (operation, effect, kind, count)");
    for c in store.onto_op_counts().unwrap() {
        let _ = writeln!(out, "{} {} {} {}", c.0, c.1, c.2.as_deref().unwrap_or("-"), c.3);
    }
    let _ = writeln!(out, "== memory (claims as facts, live or not)");
    let live = store.live_fact_ids().unwrap();
    for f in store.facts_of(&conv.id).unwrap() {
        let _ = writeln!(out, "{} {} {:?} turns {}", f.id, if live.contains(&f.id) { "live" } else { "ended" }, f.content, f.source_turns);
    }
    out
}

fn check(dreamer: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    for id in CONVERSATIONS {
        settings.bind(|| insta::assert_snapshot!(format!("dreaming__{id}__{dreamer}"), render(id, dreamer)));
    }
}

#[test]
fn the_graph_after_each_pass_rules() {
    check("rules");
}

#[test]
fn the_graph_after_each_pass_gold() {
    check("gold");
}
