//! The observations of an episode: the native format's own, with their
//! documented fallbacks, or, for a transcript, one per speaker turn by the
//! transcript→observation mapping (datasets/README.md, "Observations").

use super::extract::{self, TITLE_MAX, TITLE_SENTENCE_MIN, TYPES};
use super::js;
use crate::types::{Episode, Observation, Warning};

/// The type an observation falls back to when its own is unknown.
pub const FALLBACK_TYPE: &str = "discovery";

/// An observation ready for Extract.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The observation's id (a turn id for a mapped turn): the record's `turn`.
    pub id: String,
    pub title: String,
    pub narrative: String,
    pub facts: Vec<String>,
    pub entity_name: String,
    pub obs_type: String,
}

/// The observations of `episode`, with a warning for each fallback taken.
pub fn inputs(episode: &Episode, speakers: &[String], warnings: &mut Vec<Warning>) -> Vec<Input> {
    if episode.observations.is_empty() {
        return episode
            .turns
            .iter()
            .filter(|t| speakers.contains(&t.speaker) && !t.text.trim().is_empty())
            .map(|t| of_turn(&t.id, &t.speaker, &t.text))
            .collect();
    }
    episode.observations.iter().map(|o| of_observation(o, warnings)).collect()
}

fn of_observation(o: &Observation, warnings: &mut Vec<Warning>) -> Input {
    let narrative = match &o.narrative {
        Some(n) if !n.trim().is_empty() => n.clone(),
        _ => {
            warnings
                .push(Warning::new("observation_missing_narrative", format!("observation {}: no narrative; its title stands in", o.id)));
            o.title.clone()
        }
    };
    let obs_type = if TYPES.contains(&o.obs_type.as_str()) {
        o.obs_type.clone()
    } else {
        warnings.push(Warning::new(
            "observation_unknown_type",
            format!("observation {}: unknown type {:?}; {FALLBACK_TYPE} stands in", o.id, o.obs_type),
        ));
        FALLBACK_TYPE.to_string()
    };
    Input { id: o.id.clone(), title: o.title.clone(), narrative, facts: o.facts.clone(), entity_name: o.entity_name.clone(), obs_type }
}

/// A turn as an observation: narrative = the text, entity = the speaker,
/// title = its first sentence of at least 15 units (else the whole text),
/// cut to 60; type = the type its words signal most (else `discovery`).
pub fn of_turn(id: &str, speaker: &str, text: &str) -> Input {
    let sentence = text.split(['.', '。', '!', '！', '?', '\n']).map(str::trim).find(|s| js::len(s) >= TITLE_SENTENCE_MIN);
    let title = js::slice(sentence.unwrap_or(text.trim()), TITLE_MAX).to_string();
    let obs_type = extract::signalled_type(text, &title).unwrap_or(FALLBACK_TYPE).to_string();
    Input { id: id.to_string(), title, narrative: text.to_string(), facts: Vec::new(), entity_name: speaker.to_string(), obs_type }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Turn;

    fn episode(observations: Vec<Observation>) -> Episode {
        Episode {
            id: "e1".into(),
            timestamp: None,
            turns: vec![
                Turn {
                    id: "t1".into(),
                    speaker: "Ann".into(),
                    text: "Hi! We decided to adopt Postgres, and we chose it over MySQL.".into(),
                },
                Turn { id: "t2".into(), speaker: "tool".into(), text: "[log] ok".into() },
                Turn { id: "t3".into(), speaker: "Ann".into(), text: "  ".into() },
            ],
            observations,
        }
    }

    #[test]
    fn a_transcript_maps_speaker_turns_to_observations() {
        let mut w = vec![];
        let got = inputs(&episode(vec![]), &["Ann".into()], &mut w);
        assert_eq!(got.len(), 1);
        let o = &got[0];
        assert_eq!((o.id.as_str(), o.entity_name.as_str(), o.obs_type.as_str()), ("t1", "Ann", "decision"));
        assert_eq!(o.title, "We decided to adopt Postgres, and we chose it over MySQL");
        assert!(w.is_empty());
        assert_eq!(of_turn("t", "Bo", "Short one. Tiny.").title, "Short one. Tiny.");
        assert_eq!(of_turn("t", "Bo", "Nothing signalled here at all").obs_type, "discovery");
    }

    #[test]
    fn a_missing_narrative_and_an_unknown_type_fall_back_with_warnings() {
        let o = Observation {
            id: "o1".into(),
            title: "Lock file is stale after crash".into(),
            narrative: None,
            facts: vec![],
            entity_name: "file-lock".into(),
            obs_type: "insight".into(),
            tool_event: None,
        };
        let mut w = vec![];
        let got = inputs(&episode(vec![o]), &["Ann".into()], &mut w);
        assert_eq!(got[0].narrative, "Lock file is stale after crash");
        assert_eq!(got[0].obs_type, FALLBACK_TYPE);
        let kinds: Vec<&str> = w.iter().map(|w| w.kind.as_str()).collect();
        assert_eq!(kinds, ["observation_missing_narrative", "observation_unknown_type"]);
    }
}
