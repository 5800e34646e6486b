//! A scratch store's facts ([`super::Store::scratch`]): for a formation
//! whose store nobody reads back (a sweep point without QA), only what the
//! write policy reads back through [`WriteTx`] is kept, in memory, with no
//! SQL. It answers every call as the SQL store ([`super::SqlTx`]) does:
//!
//! - a fact's row: its conversation, content hash, `valid_until`,
//!   `invalid_at`, `superseded_by` and `pinned`; a row is live when it is
//!   neither invalidated nor superseded;
//! - `insert_fact` refuses an id already used and a content hash a live row
//!   of the conversation holds (`ON CONFLICT DO NOTHING`);
//! - `update_fact` and `update_memory` change a live row only, and refuse a
//!   content hash another live row of its conversation holds (`UPDATE OR
//!   IGNORE`);
//! - `invalidate` and `set_valid_until` set the columns of any row;
//!   reviving a row whose hash another live row holds is an error, as the
//!   unique index makes it;
//! - what no call reads back (entities, aliases, mentions, source turns,
//!   importance, the history, the audit) is not kept.
//!
//! An episode is one unit: an error undoes what it changed.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::model::fact::FactRec;
use crate::model::write::{AuditAction, EntityRow, LiveByHash, MemoryUpdate, WriteResult, WriteTx};

/// The columns of a `facts` row the policy reads back.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    conversation: String,
    hash: String,
    valid_until: Option<String>,
    invalid_at: Option<String>,
    superseded_by: Option<String>,
    pinned: bool,
}

impl Row {
    fn live(&self) -> bool {
        self.invalid_at.is_none() && self.superseded_by.is_none()
    }
}

/// Every fact row written, by id, and the live rows by (conversation, hash).
#[derive(Debug, Default)]
pub(super) struct Facts {
    rows: HashMap<String, Row>,
    live: HashMap<(String, String), String>,
}

impl Facts {
    /// Runs `decide` against the rows as one unit.
    pub(super) fn write_episode(
        &mut self,
        conversation_id: &str,
        decide: impl FnOnce(&mut dyn WriteTx) -> Result<WriteResult>,
    ) -> Result<WriteResult> {
        let mut tx = Tx { facts: self, conversation_id, undo: Vec::new() };
        let out = decide(&mut tx);
        if out.is_err() {
            let undo = std::mem::take(&mut tx.undo);
            for (id, before) in undo.into_iter().rev() {
                tx.facts.put(&id, before);
            }
        }
        out
    }

    /// Sets row `id` to `row` (`None`: no row), keeping the live index.
    fn put(&mut self, id: &str, row: Option<Row>) {
        if let Some(old) = self.rows.remove(id)
            && old.live()
        {
            let key = (old.conversation, old.hash);
            if self.live.get(&key).is_some_and(|holder| holder == id) {
                self.live.remove(&key);
            }
        }
        if let Some(row) = row {
            if row.live() {
                self.live.insert((row.conversation.clone(), row.hash.clone()), id.to_string());
            }
            self.rows.insert(id.to_string(), row);
        }
    }

    /// Whether a live row other than `id` holds `hash` in `conversation`.
    fn held_by_other(&self, conversation: &str, hash: &str, id: &str) -> bool {
        self.live.get(&(conversation.to_string(), hash.to_string())).is_some_and(|holder| holder != id)
    }
}

/// One episode's unit over the rows.
struct Tx<'f> {
    facts: &'f mut Facts,
    conversation_id: &'f str,
    /// Each row's state before the unit first changed it, in order.
    undo: Vec<(String, Option<Row>)>,
}

impl Tx<'_> {
    /// Replaces row `id`, remembering what it was.
    fn set(&mut self, id: &str, row: Option<Row>) {
        self.undo.push((id.to_string(), self.facts.rows.get(id).cloned()));
        self.facts.put(id, row);
    }

    /// Row `id` if it is live.
    fn live_row(&self, id: &str) -> Option<&Row> {
        self.facts.rows.get(id).filter(|r| r.live())
    }

    /// Rewrites live row `id`'s hash (and `valid_until` when given); `false`
    /// when it is not live or another live row of its conversation holds
    /// the hash.
    fn rewrite(&mut self, id: &str, hash: &str, valid_until: Option<Option<String>>) -> bool {
        let Some(row) = self.live_row(id) else { return false };
        if self.facts.held_by_other(&row.conversation, hash, id) {
            return false;
        }
        let mut row = row.clone();
        row.hash = hash.to_string();
        if let Some(v) = valid_until {
            row.valid_until = v;
        }
        self.set(id, Some(row));
        true
    }
}

impl WriteTx for Tx<'_> {
    fn live_by_hash(&mut self, hash: &str) -> Result<Option<LiveByHash>> {
        let key = (self.conversation_id.to_string(), hash.to_string());
        Ok(self
            .facts
            .live
            .get(&key)
            .and_then(|id| self.facts.rows.get(id).map(|r| LiveByHash { id: id.clone(), valid_until: r.valid_until.clone() })))
    }

    fn pinned(&mut self, id: &str) -> Result<Option<bool>> {
        Ok(self.live_row(id).map(|r| r.pinned))
    }

    fn insert_entity(&mut self, _e: &EntityRow) -> Result<()> {
        Ok(())
    }

    fn insert_alias(&mut self, _entity_id: &str, _alias: &str) -> Result<()> {
        Ok(())
    }

    fn insert_fact(&mut self, fact: &FactRec) -> Result<bool> {
        if self.facts.rows.contains_key(&fact.id) || self.facts.held_by_other(self.conversation_id, &fact.hash, &fact.id) {
            return Ok(false);
        }
        let row = Row {
            conversation: self.conversation_id.to_string(),
            hash: fact.hash.clone(),
            valid_until: fact.valid_until.clone(),
            invalid_at: None,
            superseded_by: None,
            pinned: fact.pinned,
        };
        self.set(&fact.id, Some(row));
        Ok(true)
    }

    fn set_valid_until(&mut self, id: &str, valid_until: &str) -> Result<()> {
        if let Some(row) = self.facts.rows.get(id) {
            let row = Row { valid_until: Some(valid_until.to_string()), ..row.clone() };
            self.set(id, Some(row));
        }
        Ok(())
    }

    fn invalidate(&mut self, id: &str, at: Option<&str>, superseded_by: Option<&str>) -> Result<()> {
        let Some(row) = self.facts.rows.get(id) else { return Ok(()) };
        let row = Row { invalid_at: at.map(str::to_string), superseded_by: superseded_by.map(str::to_string), ..row.clone() };
        if row.live() && self.facts.held_by_other(&row.conversation, &row.hash, id) {
            return Err(Error::Other(format!(
                "scratch store: UNIQUE constraint failed: facts.conversation_id, facts.content_hash (reviving {id})"
            )));
        }
        self.set(id, Some(row));
        Ok(())
    }

    fn archive(&mut self, _id: &str, _event: AuditAction, _by: &str, _reason: &str) -> Result<()> {
        Ok(())
    }

    fn update_fact(&mut self, id: &str, with: &FactRec) -> Result<bool> {
        Ok(self.rewrite(id, &with.hash, Some(with.valid_until.clone())))
    }

    fn insert_mention(&mut self, _fact_id: &str, _entity_id: &str, _text: &str) -> Result<()> {
        Ok(())
    }

    fn update_memory(&mut self, id: &str, update: &MemoryUpdate) -> Result<bool> {
        Ok(self.rewrite(id, &update.hash, None))
    }

    fn set_importance(&mut self, _id: &str, _importance: &str, _decay: bool) -> Result<()> {
        Ok(())
    }

    fn add_source_turns(&mut self, _id: &str, _turns: &[String], _from: Option<&str>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use crate::config::WriteMode;
    use crate::error::{Error, Result};
    use crate::model::fact::FactRec;
    use crate::model::write::{MemoryUpdate, WritePlan, WriteResult, WriteTx};

    /// SplitMix64: the same draws on every machine.
    struct Draws(u64);

    impl Draws {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len() as u64) as usize]
        }
        fn maybe<'a>(&mut self, xs: &[&'a str]) -> Option<&'a str> {
            if self.below(3) == 0 { None } else { Some(self.pick(xs)) }
        }
    }

    const IDS: &[&str] = &["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"];
    const HASHES: &[&str] = &["h0", "h1", "h2", "h3"];
    const DATES: &[&str] = &["2024-01-01", "2024-06-01"];

    /// One call and its arguments.
    #[derive(Debug, Clone)]
    enum Op {
        LiveByHash(&'static str),
        Pinned(&'static str),
        Insert {
            id: &'static str,
            hash: &'static str,
            valid_until: Option<&'static str>,
            pinned: bool,
        },
        SetValidUntil(&'static str, &'static str),
        Invalidate(&'static str, Option<&'static str>, Option<&'static str>),
        UpdateFact {
            id: &'static str,
            hash: &'static str,
            valid_until: Option<&'static str>,
        },
        UpdateMemory(&'static str, &'static str),
        /// `invalidate` with neither an instant nor a successor: a dead row made live again.
        Revive(&'static str),
        Fail,
    }

    fn draw(d: &mut Draws) -> Op {
        match d.below(18) {
            0..=2 => Op::LiveByHash(d.pick(HASHES)),
            3..=4 => Op::Pinned(d.pick(IDS)),
            5..=9 => Op::Insert { id: d.pick(IDS), hash: d.pick(HASHES), valid_until: d.maybe(DATES), pinned: d.below(4) == 0 },
            10 => Op::SetValidUntil(d.pick(IDS), d.pick(DATES)),
            11..=12 => Op::Invalidate(d.pick(IDS), d.maybe(DATES), d.maybe(IDS)),
            13 => Op::UpdateFact { id: d.pick(IDS), hash: d.pick(HASHES), valid_until: d.maybe(DATES) },
            14 => Op::UpdateMemory(d.pick(IDS), d.pick(HASHES)),
            15..=16 => Op::Revive(d.pick(IDS)),
            _ => Op::Fail,
        }
    }

    /// Runs `ops` through `tx`, one answer per call; the first error ends the unit.
    fn run(tx: &mut dyn WriteTx, ops: &[Op], answers: &mut Vec<String>) -> Result<WriteResult> {
        for op in ops {
            let answer = match op {
                Op::LiveByHash(h) => tx.live_by_hash(h).map(|l| format!("{:?}", l.map(|l| (l.id, l.valid_until)))),
                Op::Pinned(id) => tx.pinned(id).map(|p| format!("{p:?}")),
                Op::Insert { id, hash, valid_until, pinned } => {
                    let mut f = FactRec::for_test(id, "Ann", "likes", hash);
                    f.hash = hash.to_string();
                    f.fact.valid_until = valid_until.map(str::to_string);
                    f.pinned = *pinned;
                    tx.insert_fact(&f).map(|b| b.to_string())
                }
                Op::SetValidUntil(id, v) => tx.set_valid_until(id, v).map(|()| String::new()),
                Op::Invalidate(id, at, by) => tx.invalidate(id, *at, *by).map(|()| String::new()),
                Op::UpdateFact { id, hash, valid_until } => {
                    let mut f = FactRec::for_test(id, "Ann", "likes", hash);
                    f.hash = hash.to_string();
                    f.fact.valid_until = valid_until.map(str::to_string);
                    tx.update_fact(id, &f).map(|b| b.to_string())
                }
                Op::UpdateMemory(id, hash) => {
                    let u = MemoryUpdate {
                        title: "t".into(),
                        content: "c".into(),
                        normalized: "c".into(),
                        hash: hash.to_string(),
                        facts: String::new(),
                        turns: vec!["t2".into()],
                        embedding: Vec::new(),
                    };
                    tx.update_memory(id, &u).map(|b| b.to_string())
                }
                Op::Revive(id) => tx.invalidate(id, None, None).map(|()| String::new()),
                Op::Fail => Err(Error::Other("the unit fails".into())),
            };
            match answer {
                Ok(a) => answers.push(a),
                Err(e) => {
                    answers.push("error".into());
                    return Err(e);
                }
            }
        }
        Ok(WriteResult::default())
    }

    #[test]
    fn a_scratch_store_answers_the_policy_as_sqlite_does() {
        let mut errors = 0;
        let mut rolled_back = 0;
        for seed in 0..60u64 {
            let mut d = Draws(seed);
            let (sql, scratch) = (Store::in_memory().expect("store"), Store::scratch().expect("scratch"));
            for episode in 0..12 {
                let ops: Vec<Op> = (0..1 + d.below(8)).map(|_| draw(&mut d)).collect();
                let plan = WritePlan {
                    conversation_id: if d.below(4) == 0 { "c2" } else { "c1" }.into(),
                    episode_id: format!("e{episode}"),
                    now: None,
                    new_entities: Vec::new(),
                    new_aliases: Vec::new(),
                    proposals: Vec::new(),
                    verdicts: Vec::new(),
                    attributions: Vec::new(),
                };
                let mut answers = [Vec::new(), Vec::new()];
                let [a, b] = &mut answers;
                let from_sql = sql.write_episode(&plan, WriteMode::Full, |tx| run(tx, &ops, a)).is_ok();
                let from_scratch = scratch.write_episode(&plan, WriteMode::Full, |tx| run(tx, &ops, b)).is_ok();
                assert_eq!(answers[0], answers[1], "seed {seed}, episode {episode}: {ops:?}");
                assert_eq!(from_sql, from_scratch, "seed {seed}, episode {episode}: {ops:?}");
                let failed_at = answers[0].iter().position(|a| a == "error");
                errors += usize::from(failed_at.is_some_and(|i| !matches!(ops[i], Op::Fail)));
                rolled_back += usize::from(!from_sql);
            }
        }
        assert!(
            errors > 0 && rolled_back > errors,
            "the draws reach the unique index's error ({errors}) and rolled-back units ({rolled_back})"
        );
    }

    #[test]
    fn a_scratch_store_has_no_tables_to_read() {
        let s = Store::scratch().expect("scratch");
        assert!(s.live_fact_ids().is_err());
    }
}
