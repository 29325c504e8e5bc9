//! What coloc learned about each program (docs/knowledge.md, Where it lives):
//! one row per program and platform, and the latest [`KEPT`] records of each
//! program per team size, arrangement, partner and kind (ended, snapshot).
//!
//! Every write is one `BEGIN IMMEDIATE` transaction, so writers queue on the
//! file's write lock (for up to the busy timeout) instead of failing half
//! way, and a process killed mid-write leaves the store as it was before
//! the transaction (SQLite's write-ahead log).

use coloc_model::knowledge::{ProgramKey, Record, KEPT};
use coloc_model::profile::PlatformFingerprint;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::{Store, StoreError};

/// One program the store knows, as `coloc knowledge list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramSummary {
    pub platform: String,
    pub program: ProgramKey,
    /// The name it ran under last.
    pub name: String,
    pub records: usize,
    /// Its first and latest record, seconds since the Unix epoch.
    pub first_unix: i64,
    pub last_unix: i64,
}

/// A SQL column of an optional team size (NULL does not compare equal).
const NO_TEAM: i64 = -1;

impl Store {
    /// Adds `records`, measured on `platform`, in one transaction: a record
    /// replaces the one of the same instance and kind (a newer snapshot, or
    /// the same record imported twice), an ended record the snapshots of its
    /// instance; then only the latest [`KEPT`] of each program, team size,
    /// arrangement, partner and kind stay. Returns how many were written.
    pub fn put_records(
        &self,
        platform: &PlatformFingerprint,
        records: &[Record],
    ) -> Result<usize, StoreError> {
        self.put_all(platform, records, put_record)
    }

    /// Writes every one of `items` measured on `platform` with `put`, in one
    /// transaction (nothing for none); returns how many.
    pub(crate) fn put_all<T>(
        &self,
        platform: &PlatformFingerprint,
        items: &[T],
        put: fn(&Connection, &str, &T) -> rusqlite::Result<()>,
    ) -> Result<usize, StoreError> {
        if items.is_empty() {
            return Ok(0);
        }
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        for item in items {
            put(&tx, &platform.key(), item).map_err(|e| self.sql(e))?;
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(items.len())
    }

    /// The records of `program` on `platform`, oldest first: those filed
    /// under its key, or every record of its executable when its arguments
    /// are unknown ([`ProgramKey::covers`]).
    pub fn records(
        &self,
        platform: &PlatformFingerprint,
        program: &ProgramKey,
    ) -> Result<Vec<Record>, StoreError> {
        let bodies = match program.args {
            Some(_) => self.bodies(
                "SELECT instance, body FROM records WHERE platform = ?1 AND program = ?2 \
                 ORDER BY at, id",
                &[&platform.key(), &program.key()],
            )?,
            None => self.bodies(
                "SELECT instance, body FROM records WHERE platform = ?1 AND exe = ?2 \
                 ORDER BY at, id",
                &[&platform.key(), &program.exe],
            )?,
        };
        self.decode_records(bodies)
    }

    /// Every record of `platform`, oldest first (an export).
    pub fn all_records(&self, platform: &PlatformFingerprint) -> Result<Vec<Record>, StoreError> {
        let bodies = self.bodies(
            "SELECT instance, body FROM records WHERE platform = ?1 ORDER BY at, id",
            &[&platform.key()],
        )?;
        self.decode_records(bodies)
    }

    fn decode_records(&self, bodies: Vec<(String, String)>) -> Result<Vec<Record>, StoreError> {
        bodies
            .into_iter()
            .map(|(instance, body)| {
                serde_json::from_str(&body).map_err(|source| StoreError::Record {
                    path: self.path.clone(),
                    what: format!("record of instance {instance}"),
                    source,
                })
            })
            .collect()
    }

    /// Every program known, on `platform` or on all, by platform then name.
    pub fn programs(
        &self,
        platform: Option<&PlatformFingerprint>,
    ) -> Result<Vec<ProgramSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT p.platform, p.body, p.name, count(r.id), \
                 coalesce(min(r.at), p.first_seen), coalesce(max(r.at), p.last_seen) \
                 FROM programs p LEFT JOIN records r \
                 ON r.platform = p.platform AND r.program = p.program \
                 WHERE ?1 IS NULL OR p.platform = ?1 \
                 GROUP BY p.platform, p.program ORDER BY p.platform, p.name, p.program",
            )
            .map_err(|e| self.sql(e))?;
        let rows: Vec<(String, String, String, i64, i64, i64)> = stmt
            .query_map([platform.map(|p| p.key())], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        rows.into_iter()
            .map(|(platform, body, name, n, first, last)| {
                let program = serde_json::from_str(&body).map_err(|source| StoreError::Record {
                    path: self.path.clone(),
                    what: format!("program {name}"),
                    source,
                })?;
                Ok(ProgramSummary {
                    platform,
                    program,
                    name,
                    records: n as usize,
                    first_unix: first,
                    last_unix: last,
                })
            })
            .collect()
    }

    /// Forgets `program` on `platform` (what [`Store::records`] would give,
    /// the program's row, and the trial pairs of every set it is in);
    /// returns how many records went.
    pub fn forget(
        &self,
        platform: &PlatformFingerprint,
        program: &ProgramKey,
    ) -> Result<usize, StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        let (column, value) = match program.args {
            Some(_) => ("program", program.key()),
            None => ("exe", program.exe.clone()),
        };
        let n = tx
            .execute(
                &format!("DELETE FROM records WHERE platform = ?1 AND {column} = ?2"),
                params![platform.key(), value],
            )
            .and_then(|n| {
                tx.execute(
                    &format!("DELETE FROM programs WHERE platform = ?1 AND {column} = ?2"),
                    params![platform.key(), value],
                )?;
                Store::forget_pairs(&tx, platform, program)?;
                Ok(n)
            })
            .map_err(|e| self.sql(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(n)
    }

    /// Whether the earlier coloc's file `file` was migrated into this store,
    /// and when.
    pub fn migrated(&self, file: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT at FROM migrated WHERE file = ?1", [file], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Adds the records migrated from `file` and notes that it was, in one
    /// transaction: a file is migrated once, even by two processes at once.
    /// Returns false (and adds nothing) when it was migrated already.
    pub fn put_migrated(
        &self,
        file: &str,
        platform: &PlatformFingerprint,
        records: &[Record],
    ) -> Result<bool, StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        let added = tx
            .execute(
                "INSERT OR IGNORE INTO migrated (file, at, records) \
                 VALUES (?1, CAST(strftime('%s', 'now') AS INTEGER), ?2)",
                params![file, records.len() as i64],
            )
            .map_err(|e| self.sql(e))?;
        if added == 1 {
            for r in records {
                put_record(&tx, &platform.key(), r).map_err(|e| self.sql(e))?;
            }
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(added == 1)
    }
}

/// Writes one record inside a transaction (every write goes through here).
pub(crate) fn put_record(conn: &Connection, platform: &str, r: &Record) -> rusqlite::Result<()> {
    let program = r.program.key();
    conn.execute(
        "INSERT INTO programs (platform, program, exe, body, name, first_seen, last_seen) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) \
         ON CONFLICT (platform, program) DO UPDATE SET \
         name = CASE WHEN excluded.last_seen >= last_seen THEN excluded.name ELSE name END, \
         first_seen = min(first_seen, excluded.first_seen), \
         last_seen = max(last_seen, excluded.last_seen)",
        params![
            platform,
            program,
            r.program.exe,
            json(&r.program)?,
            r.name,
            r.at_unix
        ],
    )?;
    if r.ended {
        conn.execute(
            "DELETE FROM records WHERE platform = ?1 AND program = ?2 AND instance = ?3 \
             AND ended = 0",
            params![platform, program, r.instance],
        )?;
    }
    let team = r.threads.map_or(NO_TEAM, i64::from);
    let partner = r.partner.key();
    conn.execute(
        "INSERT OR REPLACE INTO records \
         (platform, program, exe, instance, ended, threads, arrangement, partner, source, at, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            platform,
            program,
            r.program.exe,
            r.instance,
            r.ended,
            team,
            r.arrangement.as_str(),
            partner,
            r.source.as_str(),
            r.at_unix,
            json(r)?
        ],
    )?;
    conn.execute(
        "DELETE FROM records WHERE id IN (SELECT id FROM records \
         WHERE platform = ?1 AND program = ?2 AND threads = ?3 AND arrangement = ?4 \
         AND partner = ?5 AND ended = ?6 ORDER BY at DESC, id DESC LIMIT -1 OFFSET ?7)",
        params![
            platform,
            program,
            team,
            r.arrangement.as_str(),
            partner,
            r.ended,
            KEPT as i64
        ],
    )?;
    Ok(())
}

/// `value` as JSON, for a column.
fn json<T: serde::Serialize>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}
