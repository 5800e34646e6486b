//! The QA evaluation's baseline documents beyond what the search inserts:
//! their write times, so a search `as_of` an instant sees only the turns
//! and sessions said by then.

use rusqlite::params;

use super::Store;
use crate::error::Result;

impl Store {
    /// Sets each `(document id, created_at)`'s write time (`None`: never
    /// live at any instant), in one transaction.
    pub fn date_documents(&self, conversation: &str, dates: &[(&str, Option<&str>)]) -> Result<()> {
        self.with(|c| {
            let tx = c.transaction()?;
            {
                let mut st = tx.prepare_cached("UPDATE facts SET created_at = ?3 WHERE id = ?1 AND conversation_id = ?2")?;
                for (id, at) in dates {
                    st.execute(params![id, conversation, at])?;
                }
            }
            tx.commit()
        })
    }
}
