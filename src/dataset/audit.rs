//! An audit of a LoCoMo dataset's QA gold applied to its items
//! (`memform run --evidence audited`): the public audit of LoCoMo
//! (dial481/locomo-audit, `errors.json`, fetched by `make locomo-audit-data`)
//! lists QA items with errors, each with its `correct_evidence` and
//! `correct_answer`. Applying it replaces an item's evidence turns and
//! answer with the corrected ones (docs/metrics.md, "Audited evidence").
//!
//! An entry names its item `locomo_<conversation index in locomo10.json>_qa<item
//! index>` and repeats the question. A conversation of the dataset is
//! matched to the audit's conversation index whose entries' questions are
//! its own items' questions at those indices (every one of them, at least
//! one), so neither file names nor `sample_id`s need to agree.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::types::Dataset;

/// One audited QA item.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The conversation's index in the audited release.
    pub conversation: usize,
    /// The item's index in its conversation's `qa` list.
    pub item: usize,
    pub question: String,
    pub error_type: String,
    pub correct_evidence: Vec<String>,
    pub correct_answer: Option<String>,
}

/// What applying an audit changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Entries matched to an item of the dataset.
    pub matched: usize,
    /// Items whose evidence turns changed.
    pub evidence_changed: usize,
    /// Items whose answer changed.
    pub answers_changed: usize,
    /// Entries whose conversation is not in the dataset (or whose question
    /// is not the item's): not applied.
    pub unmatched: usize,
}

fn bad(path: &Path, field: &str, message: &str) -> Error {
    Error::input(path, format!("{field}: {message}"))
}

/// Reads an audit file (`errors.json`: a list of entries).
pub fn load(path: &Path) -> Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(path, "(file)", &format!("not JSON: {e}")))?;
    let Value::Array(list) = value else { return Err(bad(path, "(file)", "expected a list of audited QA items")) };
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let here = |k: &str| format!("[{i}].{k}");
        let string = |k: &str| -> Result<String> {
            e.get(k).and_then(Value::as_str).map(String::from).ok_or_else(|| bad(path, &here(k), "expected a string"))
        };
        let id = string("question_id")?;
        let (conversation, item) = parse_id(&id).ok_or_else(|| bad(path, &here("question_id"), "expected locomo_<N>_qa<M>"))?;
        let correct_evidence = match e.get("correct_evidence") {
            Some(Value::Array(v)) => v
                .iter()
                .map(|t| t.as_str().map(String::from).ok_or_else(|| bad(path, &here("correct_evidence"), "expected a list of turn ids")))
                .collect::<Result<Vec<String>>>()?,
            _ => return Err(bad(path, &here("correct_evidence"), "expected a list of turn ids")),
        };
        let correct_answer = match e.get("correct_answer") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => return Err(bad(path, &here("correct_answer"), "expected a string")),
        };
        out.push(Entry {
            conversation,
            item,
            question: string("question")?,
            error_type: string("error_type")?,
            correct_evidence,
            correct_answer,
        });
    }
    Ok(out)
}

/// `locomo_<N>_qa<M>` → (N, M).
fn parse_id(id: &str) -> Option<(usize, usize)> {
    let rest = id.strip_prefix("locomo_")?;
    let (n, m) = rest.split_once("_qa")?;
    Some((n.parse().ok()?, m.parse().ok()?))
}

/// Applies `entries` to `dataset`'s QA items: a matched item's evidence
/// becomes its `correct_evidence` (ids naming no turn kept apart, as the
/// importers keep them) and its answer the `correct_answer`; every QA item
/// is marked audited (`audit`: the entry's error type, or empty when the
/// audit lists no error for it).
pub fn apply(dataset: &mut Dataset, entries: &[Entry]) -> Applied {
    let mut by_conv: BTreeMap<usize, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        by_conv.entry(e.conversation).or_default().push(e);
    }
    let mut out = Applied::default();
    let mut used: HashSet<usize> = HashSet::new();
    for conv in &mut dataset.conversations {
        for q in &mut conv.gold.qa {
            q.audit = Some(String::new());
        }
        let same = |e: &Entry| conv.gold.qa.get(e.item).is_some_and(|q| q.question.trim() == e.question.trim());
        let Some((&index, list)) = by_conv.iter().filter(|(c, _)| !used.contains(*c)).find(|(_, list)| list.iter().all(|e| same(e))) else {
            continue;
        };
        used.insert(index);
        let turns: HashSet<&str> = conv.episodes.iter().flat_map(|e| e.turns.iter().map(|t| t.id.as_str())).collect();
        let mut changes = Vec::new();
        for e in list {
            let (known, unknown): (Vec<String>, Vec<String>) = e.correct_evidence.iter().cloned().partition(|t| turns.contains(t.as_str()));
            changes.push((e.item, known, unknown, e.correct_answer.clone(), e.error_type.clone()));
        }
        for (item, known, unknown, answer, error_type) in changes {
            let q = &mut conv.gold.qa[item];
            out.matched += 1;
            if q.evidence != known || q.unknown_evidence != unknown {
                out.evidence_changed += 1;
                q.evidence = known;
                q.unknown_evidence = unknown;
            }
            if answer.is_some() && q.answer != answer {
                out.answers_changed += 1;
                q.answer = answer;
            }
            q.audit = Some(error_type);
        }
    }
    out.unmatched = by_conv.iter().filter(|(c, _)| !used.contains(*c)).map(|(_, l)| l.len()).sum();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic audit file (made up for this test, in the audit's format).
    const SYNTHETIC_AUDIT: &str = r#"[
 {"question_id": "locomo_3_qa1", "question": "Where does Ana work?", "golden_answer": "Acme",
  "category": 4, "error_type": "WRONG_CITATION", "cited_evidence": ["D1:1"], "correct_evidence": ["D1:2", "D9:9"],
  "reasoning": "made up", "correct_answer": "Acme Corp"},
 {"question_id": "locomo_7_qa0", "question": "Not a question of this dataset?", "golden_answer": "x",
  "category": 1, "error_type": "HALLUCINATION", "cited_evidence": [], "correct_evidence": [],
  "reasoning": "made up", "correct_answer": "y"}
]"#;

    fn dataset() -> Dataset {
        let conv = r#"{"format": "memform-conversation/1", "id": "c", "speakers": ["Ana"],
 "episodes": [{"id": "e1", "timestamp": "2025-01-01T10:00:00", "turns": [
   {"id": "D1:1", "speaker": "Ana", "text": "Hello."},
   {"id": "D1:2", "speaker": "Ana", "text": "I work at Acme Corp."}]}],
 "gold": {"qa": [
   {"question": "Who is Ana?", "answer": "a person", "evidence": ["D1:1"], "category": 4},
   {"question": "Where does Ana work?", "answer": "Acme", "evidence": ["D1:1"], "category": 4}]}}"#;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("conversations")).unwrap();
        std::fs::write(dir.path().join("conversations/c.json"), conv).unwrap();
        crate::dataset::load(dir.path()).unwrap()
    }

    #[test]
    fn a_synthetic_audit_corrects_evidence_and_answer_of_the_matched_item_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("errors.json");
        std::fs::write(&path, SYNTHETIC_AUDIT).unwrap();
        let entries = load(&path).unwrap();
        assert_eq!((entries[0].conversation, entries[0].item), (3, 1));
        let mut ds = dataset();
        let applied = apply(&mut ds, &entries);
        assert_eq!(applied, Applied { matched: 1, evidence_changed: 1, answers_changed: 1, unmatched: 1 });
        let qa = &ds.conversations[0].gold.qa;
        assert_eq!(qa[1].evidence, ["D1:2"]);
        assert_eq!(qa[1].unknown_evidence, ["D9:9"], "an id naming no turn is kept apart");
        assert_eq!(qa[1].answer.as_deref(), Some("Acme Corp"));
        assert_eq!(qa[1].audit.as_deref(), Some("WRONG_CITATION"));
        assert_eq!((qa[0].evidence.clone(), qa[0].audit.as_deref()), (vec!["D1:1".to_string()], Some("")), "unlisted: unchanged");
    }

    #[test]
    fn a_bad_audit_file_names_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("errors.json");
        std::fs::write(&path, r#"[{"question_id": "conv-26/1", "question": "q", "error_type": "x", "correct_evidence": []}]"#).unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("errors.json") && e.contains("[0].question_id"), "{e}");
        std::fs::write(&path, r#"[{"question_id": "locomo_0_qa1", "question": "q", "error_type": "x", "correct_evidence": "D1:1"}]"#)
            .unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("[0].correct_evidence"), "{e}");
    }
}
