//! `signet`'s inline entity linker: no model. It scans a fact's content for
//! proper-noun candidates (runs of capitalised words) and links the fact to
//! the conversation's existing entities whose name or alias a candidate
//! spells (case-insensitive). It never creates an entity; a link becomes a
//! `mentions` row when the fact is written.

use crate::state::ConvState;

/// One link: the entity's id and the text that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub entity_id: String,
    pub text: String,
}

/// The proper-noun candidates of `content`: maximal runs of capitalised
/// words (a word whose first letter is upper-case), each run and each of
/// its words, in order of appearance, without repeats.
pub fn proper_nouns(content: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let flush = |run: &mut Vec<&str>, out: &mut Vec<String>| {
        if run.len() > 1 {
            push_unique(out, run.join(" "));
        }
        for w in run.drain(..) {
            push_unique(out, w.to_string());
        }
    };
    for raw in content.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        if word.chars().next().is_some_and(char::is_uppercase) {
            run.push(word);
        } else {
            flush(&mut run, &mut out);
        }
        // A run ends at punctuation that closes a phrase.
        if raw.ends_with([',', '.', ';', ':', '!', '?']) {
            flush(&mut run, &mut out);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn push_unique(out: &mut Vec<String>, s: String) {
    if !s.is_empty() && !out.contains(&s) {
        out.push(s);
    }
}

/// The existing entities `content` names, each once, in order of appearance.
pub fn link(content: &str, state: &ConvState) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    for text in proper_nouns(content) {
        if let Some(e) = state.entity_by_name(&text)
            && !out.iter().any(|m| m.entity_id == e.id)
        {
            out.push(Mention { entity_id: e.id.clone(), text });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::EntityRec;
    use crate::types::EntityType;

    fn state(names: &[(&str, &[&str])]) -> ConvState {
        let entities = names
            .iter()
            .enumerate()
            .map(|(i, (n, aliases))| EntityRec {
                id: format!("c/e{i}"),
                name: n.to_string(),
                entity_type: EntityType::Person,
                aliases: aliases.iter().map(|a| a.to_string()).collect(),
                embedding: vec![],
            })
            .collect();
        ConvState { entities, ..ConvState::default() }
    }

    #[test]
    fn capitalised_runs_and_their_words_are_candidates() {
        assert_eq!(proper_nouns("Alice moved to New York, then met Bob's sister."), ["Alice", "New York", "New", "York", "Bob"]);
        assert!(proper_nouns("lower case only").is_empty());
    }

    #[test]
    fn links_only_existing_entities_by_name_or_alias_and_never_creates() {
        let st = state(&[("Alice", &[]), ("Robert", &["Bob"])]);
        let m = link("Alice met Bob and Carol in Paris.", &st);
        assert_eq!(
            m,
            vec![Mention { entity_id: "c/e0".into(), text: "Alice".into() }, Mention { entity_id: "c/e1".into(), text: "Bob".into() }]
        );
        assert_eq!(st.entities.len(), 2, "Carol and Paris are not created");
    }
}
