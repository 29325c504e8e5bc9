//! The pairs of `auto`'s trials per set of programs (docs/knowledge.md,
//! Trials of a set of programs): one row per pair, filed under the set's
//! programs and the own arrangement's round, the latest
//! [`KEPT_PAIRS`] of each kept.

use coloc_model::knowledge::trials::{SetPair, KEPT_PAIRS};
use coloc_model::knowledge::ProgramKey;
use coloc_model::profile::PlatformFingerprint;
use rusqlite::{params, Connection};

use crate::{Store, StoreError};

impl Store {
    /// Adds `pairs`, measured on `platform`, in one transaction (a pair
    /// written twice, as an import twice writes it, is one); then only the
    /// latest [`KEPT_PAIRS`] of each set and round stay. Returns how many
    /// were written.
    pub fn put_pairs(
        &self,
        platform: &PlatformFingerprint,
        pairs: &[SetPair],
    ) -> Result<usize, StoreError> {
        self.put_all(platform, pairs, put_pair)
    }

    /// Every stored pair of `platform`, oldest first.
    pub fn pairs(&self, platform: &PlatformFingerprint) -> Result<Vec<SetPair>, StoreError> {
        let bodies = self.bodies(
            "SELECT trial, body FROM trial_pairs WHERE platform = ?1 ORDER BY at, id",
            &[&platform.key()],
        )?;
        bodies
            .into_iter()
            .map(|(trial, body)| self.decode_pair(&trial, &body))
            .collect()
    }

    /// The stored pairs of `platform` whose set has one of `programs` in it,
    /// oldest first: what the sets those programs can form are looked up
    /// in, read without the rest of the platform's (the node service reads
    /// them on its loop, whenever the apps present change).
    pub fn pairs_with(
        &self,
        platform: &PlatformFingerprint,
        programs: &[ProgramKey],
    ) -> Result<Vec<SetPair>, StoreError> {
        let mut rows: Vec<(i64, i64, String, String)> = Vec::new();
        let mut needles: Vec<String> = programs
            .iter()
            .map(|p| json(&p.key()))
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.sql(e))?;
        needles.sort();
        needles.dedup();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT at, id, trial, body FROM trial_pairs \
                 WHERE platform = ?1 AND instr(programs, ?2) > 0",
            )
            .map_err(|e| self.sql(e))?;
        for needle in &needles {
            let found: Vec<(i64, i64, String, String)> = stmt
                .query_map(params![platform.key(), needle], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .and_then(|rows| rows.collect())
                .map_err(|e| self.sql(e))?;
            rows.extend(found);
        }
        rows.sort_by_key(|(at, id, ..)| (*at, *id));
        rows.dedup_by_key(|(_, id, ..)| *id);
        rows.into_iter()
            .map(|(_, _, trial, body)| self.decode_pair(&trial, &body))
            .collect()
    }

    fn decode_pair(&self, trial: &str, body: &str) -> Result<SetPair, StoreError> {
        serde_json::from_str(body).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            what: format!("pair of trial {trial}"),
            source,
        })
    }

    /// Forgets the pairs of every set `program` is in (every set of its
    /// executable when its arguments are unknown), inside `tx`; returns how
    /// many went.
    pub(crate) fn forget_pairs(
        tx: &Connection,
        platform: &PlatformFingerprint,
        program: &ProgramKey,
    ) -> rusqlite::Result<usize> {
        // The set's column is the programs' keys as a JSON array: a key
        // is in it as a JSON string, an executable inside one.
        let needle = match program.args {
            Some(_) => json(&program.key())?,
            None => program.exe.clone(),
        };
        tx.execute(
            "DELETE FROM trial_pairs WHERE platform = ?1 AND instr(programs, ?2) > 0",
            params![platform.key(), needle],
        )
    }
}

/// Writes one pair inside a transaction (every write goes through here).
pub(crate) fn put_pair(conn: &Connection, platform: &str, p: &SetPair) -> rusqlite::Result<()> {
    let set = p.set_key();
    conn.execute(
        "INSERT OR REPLACE INTO trial_pairs (platform, programs, round, trial, seq, at, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![platform, set, p.round, p.trial, p.seq, p.at_unix, json(p)?],
    )?;
    conn.execute(
        "DELETE FROM trial_pairs WHERE id IN (SELECT id FROM trial_pairs \
         WHERE platform = ?1 AND programs = ?2 AND round = ?3 \
         ORDER BY at DESC, id DESC LIMIT -1 OFFSET ?4)",
        params![platform, set, p.round, KEPT_PAIRS as i64],
    )?;
    Ok(())
}

/// `value` as JSON, for a column.
fn json<T: serde::Serialize>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use coloc_model::Topology;
    use rusqlite::{Transaction, TransactionBehavior};

    use super::*;

    fn pair(programs: &[&str], trial: &str, seq: u32, at_unix: i64) -> SetPair {
        SetPair {
            programs: programs.iter().map(|p| ProgramKey::model(p)).collect(),
            names: programs.iter().map(|p| p.to_string()).collect(),
            round: 1,
            log_ratio: -0.3,
            verdict: Some(false),
            dropped_prior: false,
            trial: trial.into(),
            seq,
            at_unix,
        }
    }

    /// Pairs read back oldest first, once however often written; the
    /// latest KEPT_PAIRS of a set stay; forgetting a program forgets the
    /// sets it is in, and only those; another platform's are apart.
    #[test]
    fn pairs_are_kept_per_set_bounded_and_forgotten_with_their_programs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.sqlite")).unwrap();
        let here = PlatformFingerprint::of(&Topology::synthetic("p", "package:1 core:2").unwrap());
        let there = PlatformFingerprint::of(&Topology::synthetic("q", "package:1 core:4").unwrap());
        let many: Vec<SetPair> = (0..40)
            .map(|i| pair(&["a", "b"], "t1", i, 1_800_000_000 + i64::from(i)))
            .collect();
        store.put_pairs(&here, &many).unwrap();
        store.put_pairs(&here, &many[35..]).unwrap();
        store
            .put_pairs(&here, &[pair(&["b", "c"], "t2", 1, 1_700_000_000)])
            .unwrap();
        store
            .put_pairs(&there, &[pair(&["a", "b"], "t3", 1, 1_700_000_000)])
            .unwrap();
        let read = store.pairs(&here).unwrap();
        assert_eq!(read.len(), KEPT_PAIRS + 1);
        assert_eq!(read[0].trial, "t2", "oldest first");
        assert_eq!(read[1..], many[40 - KEPT_PAIRS..]);
        // Looked up by program: the sets that have it.
        let with = |p: &[&str]| -> usize {
            let keys: Vec<ProgramKey> = p.iter().map(|p| ProgramKey::model(p)).collect();
            store.pairs_with(&here, &keys).unwrap().len()
        };
        assert_eq!(with(&["c"]), 1);
        assert_eq!(with(&["a"]), KEPT_PAIRS);
        assert_eq!(with(&["a", "b", "c"]), KEPT_PAIRS + 1);
        assert_eq!(with(&["d"]), 0);
        // Forget a: the set {a, b} goes, {b, c} stays; the other platform's
        // {a, b} too.
        let tx = Transaction::new_unchecked(&store.conn, TransactionBehavior::Immediate).unwrap();
        let gone = Store::forget_pairs(&tx, &here, &ProgramKey::model("a")).unwrap();
        tx.commit().unwrap();
        assert_eq!(gone, KEPT_PAIRS);
        let left = store.pairs(&here).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].trial, "t2");
        assert_eq!(store.pairs(&there).unwrap().len(), 1);
    }
}
