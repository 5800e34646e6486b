//! Versioned prompt templates (`src/llm/prompts/*.txt`, compiled in) and
//! their rendering into chat messages, plus the JSON schemas the answers
//! are asked to follow.
//!
//! A template file opens with `name:` and `version:` header lines, then a
//! `--- system` and a `--- user` section. `{{var}}` placeholders are filled
//! in one pass, so text substituted from a transcript is never re-scanned.
//! Any change to a template's text must bump its version: the version is
//! part of every fixture key, and a test pins each version's SHA-256.

use crate::error::{Error, Result};
use crate::llm::{Message, TemplateId};

/// The extraction template's source text.
pub const EXTRACT_SOURCE: &str = include_str!("prompts/extract.txt");
/// The batched contradiction judge template's source text.
pub const JUDGE_SOURCE: &str = include_str!("prompts/judge.txt");

/// The `signet` profile's extraction template's source text (Signet's contract).
pub const SIGNET_EXTRACT_SOURCE: &str = include_str!("prompts/signet_extract.txt");

/// The `signet` profile's per-fact decision template's source text.
pub const SIGNET_DECISION_SOURCE: &str = include_str!("prompts/signet_decision.txt");

/// The `memorix` profile's three templates (one call per stage per observation).
pub const MEMORIX_EXTRACT_SOURCE: &str = include_str!("prompts/memorix_extract.txt");
pub const MEMORIX_RESOLVE_SOURCE: &str = include_str!("prompts/memorix_resolve.txt");
pub const MEMORIX_EVALUATE_SOURCE: &str = include_str!("prompts/memorix_evaluate.txt");

/// Most known entity names shown to the model.
pub const MAX_KNOWN_ENTITIES: usize = 200;
/// Most recent live facts shown to the model.
pub const MAX_KNOWN_FACTS: usize = 100;

/// Entity types the extraction schema allows.
pub const ENTITY_TYPES: [&str; 9] = ["PERSON", "ORG", "PLACE", "PRODUCT", "FOOD", "ANIMAL", "EVENT", "CONCEPT", "THING"];
/// Fact types the extraction schema allows.
pub const FACT_TYPES: [&str; 5] = ["fact", "preference", "decision", "procedural", "semantic"];

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub id: TemplateId,
    pub system: String,
    pub user: String,
    /// The whole source text (what the version pins).
    pub source: &'static str,
}

impl Template {
    /// Parses a template's source; `origin` names it in errors.
    pub fn parse(origin: &str, source: &'static str) -> Result<Self> {
        let bad = |m: String| Error::input(format!("src/llm/prompts/{origin}"), m);
        let mut name = None;
        let mut version = None;
        let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
        for (i, line) in source.lines().enumerate() {
            if let Some(section) = line.strip_prefix("--- ") {
                sections.push((section.trim().to_string(), Vec::new()));
            } else if let Some((_, body)) = sections.last_mut() {
                body.push(line);
            } else if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("version:") {
                version = Some(v.trim().parse::<u32>().map_err(|e| bad(format!("line {}: version {:?}: {e}", i + 1, v.trim())))?);
            } else if !line.trim().is_empty() {
                return Err(bad(format!("line {}: unexpected header line {line:?}", i + 1)));
            }
        }
        let name = name.ok_or_else(|| bad("no `name:` header line".into()))?;
        let version = version.ok_or_else(|| bad("no `version:` header line".into()))?;
        let mut take = |want: &str| -> Result<String> {
            let pos = sections.iter().position(|(n, _)| n == want).ok_or_else(|| bad(format!("no `--- {want}` section")))?;
            let (_, body) = sections.remove(pos);
            Ok(body.join("\n").trim().to_string())
        };
        let system = take("system")?;
        let user = take("user")?;
        if let Some((n, _)) = sections.first() {
            return Err(bad(format!("unknown section `--- {n}`")));
        }
        Ok(Template { id: TemplateId { name, version }, system, user, source })
    }

    /// The template's two messages with `vars` filled in.
    pub fn render(&self, vars: &[(&str, &str)]) -> Result<Vec<Message>> {
        Ok(vec![Message::new("system", fill(&self.id, &self.system, vars)?), Message::new("user", fill(&self.id, &self.user, vars)?)])
    }
}

/// The extraction template.
pub fn extract_template() -> Result<Template> {
    Template::parse("extract.txt", EXTRACT_SOURCE)
}

/// The judge template.
pub fn judge_template() -> Result<Template> {
    Template::parse("judge.txt", JUDGE_SOURCE)
}

/// The `signet` profile's extraction template (one call per episode, Signet's contract).
pub fn signet_extract_template() -> Result<Template> {
    Template::parse("signet_extract.txt", SIGNET_EXTRACT_SOURCE)
}

/// The `signet` profile's decision template (one call per fact with candidates).
pub fn signet_decision_template() -> Result<Template> {
    Template::parse("signet_decision.txt", SIGNET_DECISION_SOURCE)
}

/// The `memorix` profile's Extract template (facts, entity, type).
pub fn memorix_extract_template() -> Result<Template> {
    Template::parse("memorix_extract.txt", MEMORIX_EXTRACT_SOURCE)
}

/// The `memorix` profile's Resolve template (add, update, delete, noop).
pub fn memorix_resolve_template() -> Result<Template> {
    Template::parse("memorix_resolve.txt", MEMORIX_RESOLVE_SOURCE)
}

/// The `memorix` profile's Evaluate template (score, category, reason).
pub fn memorix_evaluate_template() -> Result<Template> {
    Template::parse("memorix_evaluate.txt", MEMORIX_EVALUATE_SOURCE)
}

/// Every compiled-in template (for the version pin test and `memform` listings).
pub fn all_templates() -> Result<Vec<Template>> {
    Ok(vec![
        extract_template()?,
        judge_template()?,
        signet_extract_template()?,
        signet_decision_template()?,
        memorix_extract_template()?,
        memorix_resolve_template()?,
        memorix_evaluate_template()?,
    ])
}

fn fill(id: &TemplateId, text: &str, vars: &[(&str, &str)]) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| Error::Other(format!("render prompt {} v{}: unclosed `{{{{`", id.name, id.version)))?;
        let var = &after[..end];
        let value = vars
            .iter()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| *v)
            .ok_or_else(|| Error::Other(format!("render prompt {} v{}: no value for {{{{{var}}}}}", id.name, id.version)))?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Neutralises a closing fence tag inside untrusted text, so the data cannot
/// end its own fence: `</transcript>` becomes `</ transcript>`.
pub fn defuse(text: &str, tags: &[&str]) -> String {
    let mut out = text.to_string();
    for tag in tags {
        let closing = format!("</{tag}");
        let mut i = 0;
        while let Some(pos) = find_ascii_ci(&out[i..], &closing) {
            let at = i + pos + 2;
            out.insert(at, ' ');
            i = at + 1;
        }
    }
    out
}

fn find_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The fence tags the templates use for untrusted data.
pub const FENCE_TAGS: [&str; 4] = ["transcript", "known_entities", "known_facts", "pairs"];

/// The fence tags of `signet`'s decision template.
pub const SIGNET_FENCE_TAGS: [&str; 2] = ["fact", "memories"];

/// The fence tags of the `memorix` templates.
pub const MEMORIX_FENCE_TAGS: [&str; 4] = ["note", "facts", "new", "stored"];

/// The JSON schema of an extraction answer, as text: properties are listed
/// in the order a model should write them (llama.cpp's grammar keeps it).
/// Requests send [`extract_schema`], this with the request's own enums.
pub const EXTRACT_SCHEMA: &str = include_str!("prompts/extract.schema.json");
/// The JSON schema of a judge answer, as text ([`judge_schema`] adds the pair enum).
pub const JUDGE_SCHEMA: &str = include_str!("prompts/judge.schema.json");

/// `"name": {"type": T}` in a schema text with an `enum` of `values` added.
fn with_enum(schema: &str, name: &str, ty: &str, values: &str) -> String {
    schema.replace(&format!("\"{name}\": {{\"type\": \"{ty}\"}}"), &format!("\"{name}\": {{\"type\": \"{ty}\", \"enum\": {values}}}"))
}

/// The extraction schema of one request: `sourceTurn` an `enum` of the
/// turn ids shown, `subject` an `enum` of the speakers and known entities.
/// `strict` (OpenAI's `json_schema` with `strict: true`) closes every
/// object, requires every property (the dates as string or null) and drops
/// `maxItems`, as strict mode requires.
pub fn extract_schema(turn_ids: &[String], subjects: &[String], strict: bool) -> Result<String> {
    let list = |v: &[String]| serde_json::to_string(v).map_err(|e| Error::Other(format!("extraction schema: {e}")));
    let mut seen = std::collections::BTreeSet::new();
    let subjects: Vec<String> = subjects.iter().filter(|s| !s.trim().is_empty() && seen.insert(s.as_str())).cloned().collect();
    let mut s = with_enum(EXTRACT_SCHEMA, "sourceTurn", "string", &list(turn_ids)?);
    if !subjects.is_empty() {
        s = with_enum(&s, "subject", "string", &list(&subjects)?);
    }
    Ok(if strict { strictly(&s) } else { s })
}

/// The judge schema of one request: `pair` an `enum` of its pair indexes,
/// and exactly one verdict per pair.
pub fn judge_schema(pairs: &[usize], strict: bool) -> Result<String> {
    let list = serde_json::to_string(pairs).map_err(|e| Error::Other(format!("judge schema: {e}")))?;
    let s = with_enum(JUDGE_SCHEMA, "pair", "integer", &list);
    // One verdict per pair: the list is exactly as long as the pairs.
    let n = pairs.len();
    let s = s.replacen("\"type\": \"array\",", &format!("\"type\": \"array\",\n      \"minItems\": {n},\n      \"maxItems\": {n},"), 1);
    Ok(if strict { strictly(&s) } else { s })
}

/// A schema text in the form OpenAI's strict mode takes (see [`extract_schema`]).
fn strictly(schema: &str) -> String {
    let mut s = schema.replace("\"type\": \"object\",", "\"type\": \"object\", \"additionalProperties\": false,");
    for d in ["validFrom", "validUntil"] {
        s = s.replace(&format!("\"{d}\": {{\"type\": \"string\"}}"), &format!("\"{d}\": {{\"type\": [\"string\", \"null\"]}}"));
    }
    s = s.replace("\"sourceTurn\", \"sourceQuote\"]", "\"sourceTurn\", \"sourceQuote\", \"validFrom\", \"validUntil\"]");
    s.lines()
        .filter(|l| !l.trim_start().starts_with("\"maxItems\"") && !l.trim_start().starts_with("\"minItems\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::sha256_hex;

    /// SHA-256 of each template's text, per version. Editing a template
    /// without bumping its `version:` line fails here.
    const PINNED: [(&str, u32, &str); 7] = [
        ("extract", 3, "a71bbe08453708a074bc81ceb5a850525e41f0fd85137fdebd6ec8947ede7228"),
        ("judge", 2, "146e67267af848985418f0a068e1fe2e5f939733af80cbe83780cf825f3af526"),
        ("signet_extract", 1, "11dd29409c79355902bde82a2d7a11264f375571da04bce2764dcdbaf1a6b63b"),
        ("signet_decision", 2, "e77a3770b7ce99bf16dac240ceaf1dd53c0153dc71f12e8d20d4ac08d3aefaff"),
        ("memorix_extract", 1, "ef3d68801acec7f1b7d471ecc36e0e2e9fccf48add6fd975fd6084c6507f55dc"),
        ("memorix_resolve", 1, "7061616fdc67848e3017326630f6692c2d62f4b29e7e951b1920e4acf8b63484"),
        ("memorix_evaluate", 1, "4df811d667f4eaff793f06b201f551b3c6d23349e0e57f312f5118ba4192d872"),
    ];

    #[test]
    fn template_text_is_pinned_to_its_version() {
        for t in all_templates().unwrap() {
            let actual = sha256_hex(t.source.as_bytes());
            let pin = PINNED
                .iter()
                .find(|(n, _, _)| *n == t.id.name)
                .unwrap_or_else(|| panic!("template {} has no pinned hash: add it to PINNED", t.id.name));
            assert!(
                pin.1 == t.id.version && pin.2 == actual,
                "prompt template {} changed (version {}, sha256 {actual}) but the pin says \
                 version {} with sha256 {}: bump its `version:` line, re-record the fixtures \
                 (`make record`), then update PINNED in src/llm/prompts.rs",
                t.id.name,
                t.id.version,
                pin.1,
                pin.2
            );
        }
    }

    #[test]
    fn templates_parse_and_render_every_placeholder() {
        let t = extract_template().unwrap();
        assert_eq!(t.id.name, "extract");
        let msgs = t
            .render(&[
                ("session_date", "2024-01-02"),
                ("speakers", "A, B"),
                ("known_entities", "(none)"),
                ("known_facts", "(none)"),
                ("transcript", "[t1] A: {{speakers}}"),
            ])
            .unwrap();
        assert_eq!(msgs[0].role, "system");
        assert!(msgs[1].content.contains("[t1] A: {{speakers}}"), "substituted text is not re-scanned");
        assert!(!msgs[1].content.contains("{{session_date}}"));
        let err = t.render(&[("speakers", "A")]).unwrap_err().to_string();
        assert!(err.contains("no value for {{session_date}}"), "{err}");
        let j = judge_template().unwrap();
        assert!(j.render(&[("pairs", "x")]).unwrap()[1].content.contains("<pairs>\nx\n</pairs>"));
    }

    #[test]
    fn template_parse_errors_name_the_problem() {
        let err = Template::parse("x.txt", "name: x\n--- system\na\n--- user\nb").unwrap_err();
        assert!(err.to_string().contains("no `version:`"), "{err}");
        let err = Template::parse("x.txt", "name: x\nversion: 1\n--- system\na").unwrap_err();
        assert!(err.to_string().contains("no `--- user`"), "{err}");
        let err = Template::parse("x.txt", "name: x\nversion: two\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn schemas_are_json_and_list_the_allowed_types() {
        let e: serde_json::Value = serde_json::from_str(EXTRACT_SCHEMA).unwrap();
        let enum_of =
            |v: &serde_json::Value| -> Vec<String> { v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect() };
        assert_eq!(enum_of(&e["properties"]["entities"]["items"]["properties"]["type"]["enum"]), ENTITY_TYPES);
        for list in ["relationships", "literalFacts"] {
            let f = &e["properties"][list]["items"]["properties"];
            assert_eq!(enum_of(&f["factType"]["enum"]), FACT_TYPES, "{list}");
        }
        let j: serde_json::Value = serde_json::from_str(JUDGE_SCHEMA).unwrap();
        assert_eq!(j["required"][0], "verdicts");
        let subject = EXTRACT_SCHEMA.find("\"subject\"").unwrap();
        assert!(subject < EXTRACT_SCHEMA.find("\"confidence\"").unwrap(), "writing order kept");
    }

    #[test]
    fn per_request_schemas_carry_the_requests_enums_and_no_template_example() {
        let ids = vec!["t1".to_string(), "t2".to_string()];
        let subjects = vec!["Ann".to_string(), "Bo".to_string(), "Ann".to_string(), String::new()];
        let e: serde_json::Value = serde_json::from_str(&extract_schema(&ids, &subjects, false).unwrap()).unwrap();
        for list in ["relationships", "literalFacts"] {
            let f = &e["properties"][list]["items"]["properties"];
            assert_eq!(f["sourceTurn"]["enum"], serde_json::json!(["t1", "t2"]), "{list}");
            assert_eq!(f["subject"]["enum"], serde_json::json!(["Ann", "Bo"]), "{list}: deduplicated, blanks dropped");
        }
        let other: serde_json::Value = serde_json::from_str(&extract_schema(&ids[..1], &subjects, false).unwrap()).unwrap();
        assert_ne!(e, other, "another request's turns, another schema");
        let j: serde_json::Value = serde_json::from_str(&judge_schema(&[0, 2], false).unwrap()).unwrap();
        assert_eq!(j["properties"]["verdicts"]["items"]["properties"]["pair"]["enum"], serde_json::json!([0, 2]));
        assert_eq!(j["properties"]["verdicts"]["minItems"], 2);
        let strict: serde_json::Value = serde_json::from_str(&judge_schema(&[0, 2], true).unwrap()).unwrap();
        assert_eq!(strict["properties"]["verdicts"]["items"]["additionalProperties"], false);
        assert!(strict["properties"]["verdicts"].get("minItems").is_none());
        // No worked example to copy: the prompts show no answer values.
        for t in all_templates().unwrap() {
            for copyable in ["\"sourceTurn\": \"", "{\"pair\": 0", "\"name\": \"", "\"reason\": \""] {
                assert!(!t.source.contains(copyable), "{} shows an example answer ({copyable})", t.id.name);
            }
        }
    }

    #[test]
    fn defuse_breaks_closing_tags_in_any_case() {
        let s = defuse("a </transcript> b </TRANSCRIPT> c <transcript>", &FENCE_TAGS);
        assert_eq!(s, "a </ transcript> b </ TRANSCRIPT> c <transcript>");
    }
}
