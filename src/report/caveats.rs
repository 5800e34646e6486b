//! Caveats that travel with an artefact: what a reader of `report.md`,
//! `compare.md` or the gate's step summary must know before reading its
//! figures, stated at the top of each (not only in the README).

use serde_json::Value;

/// Models registered as smoke-test models: bundled so that the recorded
/// boundary, the transport and the guards run end to end with no network
/// and no key, too small for their answers to measure anything. Matched
/// case-insensitively as a prefix of the model's name.
pub const SMOKE_TEST_MODELS: &[&str] = &["SmolLM2-135M"];

/// True when `model` is a registered smoke-test model.
pub fn is_smoke_test_model(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    SMOKE_TEST_MODELS.iter().any(|p| m.starts_with(&p.to_ascii_lowercase()))
}

/// The smoke-test model whose answers a run (its `run.json`) used, if any:
/// the LLM extracted or judged (not replaced by rules or the gold oracle).
pub fn smoke_test_model(manifest: &Value) -> Option<String> {
    let llm_stage = ["extract_mode", "judge_mode"].iter().any(|k| manifest.get(*k).and_then(Value::as_str) == Some("llm"));
    let model =
        manifest.pointer("/llm/model").and_then(Value::as_str).or_else(|| manifest.pointer("/config/llm_model").and_then(Value::as_str))?;
    (llm_stage && is_smoke_test_model(model)).then(|| model.to_string())
}

/// Why `profile` does not compute `metric` (it skips the step the metric
/// measures, by design), or `None` when it does: such a metric reads
/// "n/a" with this reason, not 0.
pub fn not_computed(profile: &str, metric: &str) -> Option<&'static str> {
    match (profile, metric) {
        ("signet", "entity_resolution_rate") => {
            Some("signet links entities inline as it writes and has no entity resolution stage, so no stored fact is counted as resolved")
        }
        ("mem0", "turn_precision" | "turn_recall" | "turn_f1") => Some(
            "mem0 keeps no source turn for a memory (it forms memories from the episode's messages together), so no stored fact names a turn",
        ),
        _ => None,
    }
}

/// The caveats of a run, as Markdown paragraphs (bold lead, then why).
pub fn of_run(manifest: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(model) = smoke_test_model(manifest) {
        out.push(format!(
            "**Caveat: the LLM answers came from `{model}`, the bundled smoke-test model.** It is there to exercise the recorded \
             boundary, the transport and the guards end to end; its figures say nothing about what a capable model would \
             extract or judge, so read an LLM-versus-rules difference here as a property of this tiny model, not of LLM extraction."
        ));
    }
    if manifest.get("profile").and_then(Value::as_str) == Some("mem0") {
        out.push(
            "**Caveat: mem0 keeps no source turn.** Its memories name no turn, so the turn figures are not computed and the \
             QA figures that score retrieved documents by their evidence turns (`qa_*` and `qa_system_*` recall, nDCG, MRR) \
             read 0 by construction; content precision/recall against the gold facts' text, `hit_holds_answer` and the \
             answer-in-budget figures still measure it."
                .to_string(),
        );
    }
    // LoCoMo and LongMemEval are chat transcripts (a native dataset may
    // carry agent observations, which memorix is built for).
    let transcripts = matches!(manifest.pointer("/dataset/format").and_then(Value::as_str), Some("locomo" | "longmemeval"));
    if manifest.get("profile").and_then(Value::as_str) == Some("memorix")
        && manifest.get("extract_mode").and_then(Value::as_str) != Some("gold")
        && transcripts
    {
        out.push(
            "**Caveat: memorix is built for coding-agent observations (tool calls, file edits), not chat transcripts.** On a \
             conversation dataset it discards most turns as carrying no observation, so its low recall here measures the \
             mismatch of dataset and profile, not memorix on the data it was built for."
                .to_string(),
        );
    }
    out
}

/// The caveats as a block for the top of a Markdown file (empty when none).
pub fn block(caveats: &[String]) -> String {
    caveats.iter().map(|c| format!("> {c}\n\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_model_is_a_smoke_test_model_only_where_the_llm_answered() {
        let m = serde_json::json!({"extract_mode": "llm", "judge_mode": "llm", "llm": {"model": "SmolLM2-135M-Instruct.Q4_1"}});
        assert_eq!(smoke_test_model(&m).as_deref(), Some("SmolLM2-135M-Instruct.Q4_1"));
        assert!(of_run(&m)[0].contains("smoke-test model"));
        let rules = serde_json::json!({"extract_mode": "rules", "judge_mode": "rules", "llm": {"model": "SmolLM2-135M-Instruct.Q4_1"}});
        assert!(of_run(&rules).is_empty(), "no LLM answered");
        let big = serde_json::json!({"extract_mode": "llm", "judge_mode": "llm", "llm": {"model": "Qwen3-32B"}});
        assert!(of_run(&big).is_empty());
        let memorix =
            serde_json::json!({"profile": "memorix", "extract_mode": "rules", "judge_mode": "rules", "dataset": {"format": "locomo"}});
        assert!(of_run(&memorix)[0].contains("not chat transcripts"));
        let observations = serde_json::json!({"profile": "memorix", "extract_mode": "rules", "dataset": {"format": "native"}});
        assert!(of_run(&observations).is_empty(), "a native dataset may hold the observations memorix is built for");
        assert!(not_computed("signet", "entity_resolution_rate").is_some());
        assert!(not_computed("soda", "entity_resolution_rate").is_none());
        assert!(not_computed("mem0", "turn_recall").is_some());
        let mem0 = serde_json::json!({"profile": "mem0", "extract_mode": "llm", "judge_mode": "llm", "config": {"llm_model": "SmolLM2-135M-Instruct.Q4_1"}});
        let c = of_run(&mem0);
        assert!(c.len() == 2 && c[0].contains("smoke-test model") && c[1].contains("mem0 keeps no source turn"), "{c:?}");
    }
}
