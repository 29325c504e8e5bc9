//! The profile store (docs/architecture.md, Components): one SQLite file holding apps'
//! profiles (ReSense §2.2: characterize once per platform, reuse in every run),
//! machines' memory calibrations (NuPoCo §4.3) and what coloc learned of each
//! program from the runs it managed (docs/knowledge.md), all keyed by platform.
//!
//! Profiles are filed under the app's identity key and the platform's fingerprint
//! key ([`AppIdentity::key`], [`PlatformFingerprint::key`]) and stored as JSON, so
//! the model's types stay the single description of a profile; the columns beside
//! the JSON exist for lookups and listings. The file is opened in WAL mode with a
//! busy timeout, so several `coloc` processes may read while one writes. The CLI
//! chooses the file's path; this crate takes it.

mod calibration;
mod choose;
mod error;
mod exchange;
mod knowledge;
mod recover;
mod schema;
mod trials;

use std::path::{Path, PathBuf};

use coloc_model::profile::{
    AppIdentity, AppProfile, LevelProfile, LevelResult, PlatformFingerprint, Signal,
};
use rusqlite::{params, Connection, OptionalExtension};

pub use self::choose::{choose, Unchosen, MIN_KEY_START};
pub use self::error::StoreError;
pub use self::exchange::{
    ImportReport, KnowledgeImport, Refused, EXPORT_FORMAT, EXPORT_VERSION, KNOWLEDGE_FORMAT,
    KNOWLEDGE_VERSION,
};
pub use self::knowledge::ProgramSummary;
pub use self::recover::SetAside;
pub use self::schema::SCHEMA_VERSION;

/// An open profile store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// One stored profile, as `coloc profile list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSummary {
    pub identity: AppIdentity,
    pub platform: PlatformFingerprint,
    /// Per level, its label and its score (None where not characterizable).
    pub levels: Vec<(String, Option<f64>)>,
    /// The signals the scored levels were measured with (docs/signals.md:
    /// every profile records which), each once, in level order.
    pub signals: Vec<Signal>,
    /// When it was last written, seconds since the Unix epoch.
    pub updated_unix: i64,
}

impl Store {
    /// Opens the store at `path`, creating the file and its schema if needed.
    /// A damaged file, another program's SQLite database and a store written by a
    /// newer coloc are errors naming the file; none of them is modified.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let conn = schema::open(&path)?;
        Ok(Self { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sql(&self.path, e)
    }

    fn decode(&self, what: impl FnOnce() -> String, body: &str) -> Result<AppProfile, StoreError> {
        serde_json::from_str(body).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            what: what(),
            source,
        })
    }

    /// Stores a profile, replacing the one of the same identity and platform.
    pub fn put(&self, profile: &AppProfile) -> Result<(), StoreError> {
        put_on(&self.conn, profile).map_err(|e| self.sql(e))
    }

    /// The profile of `identity` on `platform`, if one was stored.
    pub fn get(
        &self,
        identity: &AppIdentity,
        platform: &PlatformFingerprint,
    ) -> Result<Option<AppProfile>, StoreError> {
        let body: Option<String> = self
            .conn
            .query_row(
                "SELECT body FROM profiles WHERE identity = ?1 AND platform = ?2",
                params![identity.key(), platform.key()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        body.map(|b| self.decode(|| format!("profile of {identity} on {platform}"), &b))
            .transpose()
    }

    /// Every profile measured on `platform`, by app name (what a run on that
    /// platform hands to its policy).
    pub fn for_platform(
        &self,
        platform: &PlatformFingerprint,
    ) -> Result<Vec<AppProfile>, StoreError> {
        self.bodies(
            "SELECT identity, body FROM profiles WHERE platform = ?1 ORDER BY app, identity",
            &[&platform.key()],
        )?
        .iter()
        .map(|(key, body)| self.decode(|| format!("profile {key} on {platform}"), body))
        .collect()
    }

    /// Every stored profile, summarized, by platform then app name.
    pub fn list(&self) -> Result<Vec<ProfileSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT identity, platform, updated, body FROM profiles \
                 ORDER BY platform, app, identity",
            )
            .map_err(|e| self.sql(e))?;
        let rows: Vec<(String, String, i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        rows.into_iter()
            .map(|(identity, platform, updated_unix, body)| {
                let p = self.decode(|| format!("profile {identity} on {platform}"), &body)?;
                let scored = |l: &LevelProfile| match &l.result {
                    LevelResult::Scored(s) => Some((s.score, s.signal)),
                    LevelResult::NotCharacterizable { .. } => None,
                };
                let mut signals = Vec::new();
                for (_, signal) in p.levels.iter().filter_map(scored) {
                    if !signals.contains(&signal) {
                        signals.push(signal);
                    }
                }
                Ok(ProfileSummary {
                    levels: p
                        .levels
                        .iter()
                        .map(|l| (l.level.label(), scored(l).map(|(score, _)| score)))
                        .collect(),
                    signals,
                    identity: p.identity,
                    platform: p.platform,
                    updated_unix,
                })
            })
            .collect()
    }

    /// Rows of (key, JSON body) of a query.
    fn bodies(
        &self,
        query: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self.conn.prepare(query).map_err(|e| self.sql(e))?;
        stmt.query_map(args, |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))
    }
}

/// The one INSERT every write goes through (`put` and imports).
fn put_on(conn: &Connection, profile: &AppProfile) -> rusqlite::Result<()> {
    let body = serde_json::to_string(profile)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.execute(
        "INSERT OR REPLACE INTO profiles (identity, platform, app, updated, body) \
         VALUES (?1, ?2, ?3, CAST(strftime('%s', 'now') AS INTEGER), ?4)",
        params![
            profile.identity.key(),
            profile.platform.key(),
            profile.identity.name,
            body
        ],
    )?;
    Ok(())
}
