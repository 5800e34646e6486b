//! The store-free rules of a Dreaming pass (docs/dreaming.md, section 8):
//! which mode a triggered pass runs, when a pass exits without invoking a
//! dreamer, which modes consume evidence, the watermark rule on memform's
//! logical clock, and the triggers. The pass runner that records passes in
//! the store is not written yet; these functions are what it will call.

use crate::types::string_enum;

string_enum! {
    /// A pass's mode (Signet's `DreamingMode`: `incremental`, `compact`,
    /// `incremental-hygiene`, `incremental-content`).
    pub enum PassMode {
        Incremental => "incremental",
        Compact => "compact",
        Hygiene => "hygiene",
        Content => "content",
    }
}

string_enum! {
    /// The focused runbook a scheduled pass followed last (Signet's `DreamingPassFocus`).
    pub enum Focus {
        Hygiene => "hygiene",
        Content => "content",
    }
}

/// Signet's `selectDreamingPassMode`: with both attention and a backlog
/// pending, alternate (starting with hygiene, so content gets a turn even
/// while the queue refills); with one kind of work, run that kind; with
/// neither, the combined mode (which then exits early).
pub fn select_mode(last: Option<Focus>, pending_attention: bool, backlog: bool) -> PassMode {
    match (pending_attention, backlog) {
        (true, true) if last == Some(Focus::Hygiene) => PassMode::Content,
        (true, true) => PassMode::Hygiene,
        (true, false) => PassMode::Hygiene,
        (false, true) => PassMode::Content,
        (false, false) => PassMode::Incremental,
    }
}

/// Signet's `dreamingEarlyExitSummary`: the summary of a pass that exits
/// without invoking a dreamer because its own work is empty, or `None`.
/// `compact` never exits early.
pub fn early_exit_summary(mode: PassMode, pending_attention: bool, backlog: bool) -> Option<&'static str> {
    match mode {
        PassMode::Hygiene if !pending_attention => Some("No hygiene attention to process"),
        PassMode::Content if !backlog => Some("No new episodic evidence to process"),
        PassMode::Incremental if !pending_attention && !backlog => Some("No new episodic evidence or semantic attention to process"),
        _ => None,
    }
}

/// Signet's `dreamingModeAdvancesEvidence`: every mode but hygiene consumes
/// evidence and may move the watermark.
pub fn consumes_evidence(mode: PassMode) -> bool {
    mode != PassMode::Hygiene
}

/// Where a turn stands with the dreamer (`dream_consumption.state`; a turn
/// with no row is `Pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Never shown to a dreamer.
    Pending,
    /// Shown in the running pass.
    Delivered,
    /// A completed pass used it.
    Consumed,
    /// Cited by a rejected operation: pending again.
    Excluded,
    /// Inspected whole and judged to hold no durable fact.
    Reviewed,
    /// Named as deferred: pending again.
    Deferred,
    /// The safety policy withholds it: never backlog.
    Withheld,
}

impl TurnState {
    /// Settled: the turn is no longer backlog.
    pub fn is_settled(self) -> bool {
        matches!(self, TurnState::Consumed | TurnState::Reviewed | TurnState::Withheld)
    }
}

/// The watermark a completed pass leaves (docs/dreaming.md, 8.3): the
/// largest episode sequence number `w` among the episodes ingested when the
/// pass began (`episodes`, in order, each its turns' states) such that every
/// turn of every episode up to `w` is settled; `previous` when the mode
/// consumes no evidence (a hygiene pass never moves it) or when no episode
/// is wholly settled. It never moves back.
pub fn next_watermark(mode: PassMode, previous: Option<usize>, episodes: &[Vec<TurnState>]) -> Option<usize> {
    if !consumes_evidence(mode) {
        return previous;
    }
    let settled = episodes.iter().take_while(|turns| turns.iter().all(|t| t.is_settled())).count();
    let computed = settled.checked_sub(1);
    match (previous, computed) {
        (Some(p), Some(c)) => Some(p.max(c)),
        (p, None) => p,
        (None, c) => c,
    }
}

/// A turn's tokens for the backlog: `ceil(chars / 4)` (memform's count;
/// Signet counts exact BPE tokens).
pub fn turn_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

string_enum! {
    /// Why a pass runs.
    pub enum TriggerReason {
        Attention => "attention",
        TokenThreshold => "token-threshold",
        EveryEpisodes => "every-episodes",
        EndOfConversation => "end-of-conversation",
    }
}

/// What the triggers look at after an episode is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerState {
    /// Turns not settled (the backlog).
    pub backlog_turns: usize,
    /// Their tokens ([`turn_tokens`]).
    pub backlog_tokens: usize,
    pub pending_attention: bool,
    /// Episodes stored since the last pass (or since the first).
    pub episodes_since_pass: usize,
    /// The conversation's last episode has been stored.
    pub conversation_ended: bool,
}

/// The trigger keys (docs/dreaming.md, 8.4; config keys when the profile is wired).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerConfig {
    /// `enabled`: false, no pass ever runs.
    pub enabled: bool,
    /// `dreaming_paused`: triggers are evaluated, no pass runs.
    pub paused: bool,
    /// `dreaming_token_threshold` (Signet's `tokenThreshold`, 100,000).
    pub token_threshold: usize,
    /// `dreaming_every_episodes` (5; 0 = off).
    pub every_episodes: usize,
    /// `dreaming_end_of_conversation` (true).
    pub end_of_conversation: bool,
}

impl Default for TriggerConfig {
    fn default() -> Self {
        TriggerConfig { enabled: true, paused: false, token_threshold: 100_000, every_episodes: 5, end_of_conversation: true }
    }
}

/// Whether a pass runs now, and why (docs/dreaming.md, 8.4), first rule
/// that applies: disabled or paused → no; no backlog and no attention → no
/// (an empty ledger never triggers); pending attention; a backlog of at
/// least the token threshold; at least N episodes since the last pass; the
/// end of the conversation.
pub fn evaluate_trigger(state: &TriggerState, cfg: &TriggerConfig) -> Option<TriggerReason> {
    let backlog = state.backlog_turns > 0;
    if !cfg.enabled || cfg.paused || (!backlog && !state.pending_attention) {
        return None;
    }
    if state.pending_attention {
        return Some(TriggerReason::Attention);
    }
    if state.backlog_tokens >= cfg.token_threshold {
        return Some(TriggerReason::TokenThreshold);
    }
    if cfg.every_episodes > 0 && state.episodes_since_pass >= cfg.every_episodes {
        return Some(TriggerReason::EveryEpisodes);
    }
    if cfg.end_of_conversation && state.conversation_ended {
        return Some(TriggerReason::EndOfConversation);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use TurnState::*;

    // Signet's `dreaming.test.ts`: "selects the focused runbook, alternating
    // when both kinds of work are pending (#1098)" (its three-argument cases).
    #[test]
    fn selects_the_focused_runbook_alternating_when_both_kinds_of_work_are_pending() {
        assert_eq!(select_mode(None, true, true), PassMode::Hygiene);
        assert_eq!(select_mode(Some(Focus::Hygiene), true, true), PassMode::Content);
        assert_eq!(select_mode(Some(Focus::Content), true, true), PassMode::Hygiene);
        assert_eq!(select_mode(Some(Focus::Content), true, false), PassMode::Hygiene);
        assert_eq!(select_mode(Some(Focus::Hygiene), false, true), PassMode::Content);
        assert_eq!(select_mode(None, false, false), PassMode::Incremental);
    }

    // "early-exits each focused pass mode on its own empty work (#1098)".
    #[test]
    fn early_exits_each_focused_pass_mode_on_its_own_empty_work() {
        assert_eq!(early_exit_summary(PassMode::Hygiene, false, false), Some("No hygiene attention to process"));
        assert_eq!(early_exit_summary(PassMode::Hygiene, true, true), None);
        assert_eq!(early_exit_summary(PassMode::Content, true, false), Some("No new episodic evidence to process"));
        assert_eq!(early_exit_summary(PassMode::Content, false, true), None);
        assert_eq!(
            early_exit_summary(PassMode::Incremental, false, false),
            Some("No new episodic evidence or semantic attention to process")
        );
        assert_eq!(early_exit_summary(PassMode::Incremental, true, false), None);
        assert_eq!(early_exit_summary(PassMode::Compact, false, false), None);
    }

    // "does not advance the evidence watermark for hygiene-only work" and
    // "… when a hygiene pass early-exits": the rule, store-free.
    #[test]
    fn a_hygiene_pass_never_moves_the_watermark() {
        let all_settled = vec![vec![Consumed, Consumed], vec![Reviewed]];
        assert_eq!(next_watermark(PassMode::Hygiene, None, &all_settled), None);
        assert_eq!(next_watermark(PassMode::Hygiene, Some(0), &all_settled), Some(0));
        assert_eq!(next_watermark(PassMode::Content, None, &all_settled), Some(1));
        assert!(!consumes_evidence(PassMode::Hygiene));
        assert!(consumes_evidence(PassMode::Compact));
    }

    // "does not advance the evidence watermark past evidence a content pass
    // never surfaced" and "advances … only to the evidence the pass
    // surfaced": an unsettled turn holds the watermark below its episode.
    #[test]
    fn the_watermark_stops_before_the_first_unsettled_turn() {
        let episodes = vec![vec![Consumed, Withheld], vec![Consumed, Deferred], vec![Consumed]];
        assert_eq!(next_watermark(PassMode::Content, None, &episodes), Some(0));
        let nothing = vec![vec![Pending], vec![Consumed]];
        assert_eq!(next_watermark(PassMode::Content, None, &nothing), None);
        assert_eq!(next_watermark(PassMode::Incremental, Some(3), &nothing), Some(3), "never moves back");
        let excluded = vec![vec![Excluded]];
        assert_eq!(next_watermark(PassMode::Content, None, &excluded), None);
    }

    #[test]
    fn no_backlog_and_no_attention_no_pass() {
        let cfg = TriggerConfig::default();
        let idle = TriggerState {
            backlog_turns: 0,
            backlog_tokens: 0,
            pending_attention: false,
            episodes_since_pass: 50,
            conversation_ended: true,
        };
        assert_eq!(evaluate_trigger(&idle, &cfg), None);
        let attention = TriggerState { pending_attention: true, ..idle };
        assert_eq!(evaluate_trigger(&attention, &cfg), Some(TriggerReason::Attention));
        let paused = TriggerConfig { paused: true, ..cfg };
        assert_eq!(evaluate_trigger(&attention, &paused), None);
        let disabled = TriggerConfig { enabled: false, ..cfg };
        assert_eq!(evaluate_trigger(&attention, &disabled), None);
    }

    #[test]
    fn tokens_every_n_episodes_and_the_end_trigger_a_backlog() {
        let cfg = TriggerConfig { token_threshold: 100, every_episodes: 3, ..TriggerConfig::default() };
        let small = TriggerState {
            backlog_turns: 4,
            backlog_tokens: 99,
            pending_attention: false,
            episodes_since_pass: 2,
            conversation_ended: false,
        };
        assert_eq!(evaluate_trigger(&small, &cfg), None);
        assert_eq!(evaluate_trigger(&TriggerState { backlog_tokens: 100, ..small }, &cfg), Some(TriggerReason::TokenThreshold));
        assert_eq!(evaluate_trigger(&TriggerState { episodes_since_pass: 3, ..small }, &cfg), Some(TriggerReason::EveryEpisodes));
        assert_eq!(evaluate_trigger(&TriggerState { conversation_ended: true, ..small }, &cfg), Some(TriggerReason::EndOfConversation));
        let no_every = TriggerConfig { every_episodes: 0, end_of_conversation: false, ..cfg };
        assert_eq!(evaluate_trigger(&TriggerState { episodes_since_pass: 99, conversation_ended: true, ..small }, &no_every), None);
    }

    #[test]
    fn turn_tokens_round_up() {
        assert_eq!(turn_tokens(""), 0);
        assert_eq!(turn_tokens("abcd"), 1);
        assert_eq!(turn_tokens("abcde"), 2);
        assert_eq!(turn_tokens("éééé"), 1);
    }
}
