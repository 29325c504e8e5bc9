//! The file's schema and how an existing file is recognized.
//!
//! A coloc store has a `coloc_schema` table holding one version number. Opening
//! tells apart, before changing anything in the file: a new or empty file (the
//! schema is created), a coloc store of this version (used as is), one of a newer
//! version (refused: an older coloc must not rewrite what it does not know), an
//! SQLite database of another program (refused, untouched) and a file that is not
//! SQLite at all or is damaged (refused).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// The schema this code writes and reads. Version 2 added machine
/// calibrations, version 3 what coloc learns of each program, version 4
/// the pairs of `auto`'s trials per set of programs (docs/knowledge.md);
/// older stores are upgraded when opened.
pub const SCHEMA_VERSION: i64 = 4;

/// How long a connection waits for another one's write lock before giving up;
/// characterization runs write one profile at a time, so waits are short.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Each version's step from the one before, in order: a new file takes
/// them all, an older store those past its version, in one transaction
/// (statements are `IF NOT EXISTS`, so a step another process ran first is a
/// no-op).
const STEPS: [(i64, &str); 4] = [
    (
        1,
        "
CREATE TABLE IF NOT EXISTS coloc_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS profiles (
    identity TEXT NOT NULL,
    platform TEXT NOT NULL,
    app TEXT NOT NULL,
    updated INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (identity, platform)
);
CREATE INDEX IF NOT EXISTS profiles_by_platform ON profiles (platform);
",
    ),
    (
        2,
        "
CREATE TABLE IF NOT EXISTS calibrations (
    platform TEXT PRIMARY KEY,
    updated INTEGER NOT NULL,
    body TEXT NOT NULL
);
",
    ),
    (
        3,
        "
CREATE TABLE IF NOT EXISTS programs (
    platform TEXT NOT NULL,
    program TEXT NOT NULL,
    exe TEXT NOT NULL,
    body TEXT NOT NULL,
    name TEXT NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    PRIMARY KEY (platform, program)
);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    program TEXT NOT NULL,
    exe TEXT NOT NULL,
    instance TEXT NOT NULL,
    ended INTEGER NOT NULL,
    threads INTEGER NOT NULL,
    arrangement TEXT NOT NULL,
    partner TEXT NOT NULL,
    source TEXT NOT NULL,
    at INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (platform, program, instance, ended)
);
CREATE INDEX IF NOT EXISTS records_kept
    ON records (platform, program, threads, arrangement, partner, ended, at);
CREATE INDEX IF NOT EXISTS records_by_exe ON records (platform, exe);
CREATE TABLE IF NOT EXISTS migrated (
    file TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    records INTEGER NOT NULL
);
",
    ),
    (
        4,
        "
CREATE TABLE IF NOT EXISTS trial_pairs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    programs TEXT NOT NULL,
    round INTEGER NOT NULL,
    trial TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (platform, trial, seq)
);
CREATE INDEX IF NOT EXISTS trial_pairs_kept ON trial_pairs (platform, programs, round, at);
",
    ),
];

const _: () = assert!(STEPS[STEPS.len() - 1].0 == SCHEMA_VERSION);

/// Tables every store has after upgrade, and the version that added each.
const TABLES: [(&str, i64); 7] = [
    ("coloc_schema", 1),
    ("profiles", 1),
    ("calibrations", 2),
    ("programs", 3),
    ("records", 3),
    ("migrated", 3),
    ("trial_pairs", 4),
];

/// Opens `path`, creating the schema in a new file and checking an existing one.
pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let sql = |e| StoreError::sql(path, e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    let tables = user_tables(&conn).map_err(sql)?;
    if tables.is_empty() {
        // Another process may be creating it too: the write lock orders them and
        // `IF NOT EXISTS` plus the version check make the second one a no-op.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        migrate(&tx, 0).map_err(sql)?;
        let versions: i64 = tx
            .query_row("SELECT count(*) FROM coloc_schema", [], |r| r.get(0))
            .map_err(sql)?;
        if versions == 0 {
            tx.execute(
                "INSERT INTO coloc_schema (version) VALUES (?1)",
                [SCHEMA_VERSION],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
    } else {
        let found = check(path, &conn, &tables)?;
        if found < SCHEMA_VERSION {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            migrate(&tx, found).map_err(sql)?;
            tx.execute("UPDATE coloc_schema SET version = ?1", [SCHEMA_VERSION])
                .map_err(sql)?;
            tx.commit().map_err(sql)?;
        }
    }
    // Readers never block the writer nor each other (the store is shared by
    // concurrent `coloc` processes).
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
        .map_err(sql)?;
    // In WAL mode, NORMAL syncs at checkpoints only: a commit survives the
    // process being killed (`kill -9` of the node service), not a power
    // loss, which costs the last few records learned and never the file.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    Ok(conn)
}

fn user_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') \
         AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

/// Runs the steps past version `from`.
fn migrate(tx: &rusqlite::Transaction<'_>, from: i64) -> rusqlite::Result<()> {
    for (_, step) in STEPS.iter().filter(|(v, _)| *v > from) {
        tx.execute_batch(step)?;
    }
    Ok(())
}

/// Checks an existing file and returns its schema version.
fn check(path: &Path, conn: &Connection, tables: &[String]) -> Result<i64, StoreError> {
    if !tables.iter().any(|t| t == "coloc_schema") {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            tables: tables.join(", "),
        });
    }
    let damaged = |reason: String| StoreError::Damaged {
        path: path.to_path_buf(),
        reason,
    };
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM coloc_schema")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| StoreError::sql(path, e))?;
    let found = match versions[..] {
        [v] => v,
        _ => {
            return Err(damaged(format!(
                "`coloc_schema` holds {} versions, expected one",
                versions.len()
            )))
        }
    };
    if found < 1 {
        return Err(damaged(format!(
            "schema version {found} was never written by coloc"
        )));
    }
    if found > SCHEMA_VERSION {
        return Err(StoreError::Newer {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let missing = TABLES
        .iter()
        .find(|(t, since)| *since <= found && !tables.iter().any(|x| x == t));
    match missing {
        Some((t, _)) => Err(damaged(format!("table `{t}` is missing"))),
        None => Ok(found),
    }
}
