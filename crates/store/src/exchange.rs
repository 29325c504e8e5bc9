//! Moving profiles and knowledge between machines: JSON exports, and imports
//! that accept only what was measured on the importing machine's platform (a
//! sensitivity score is a property of one platform, ReSense §2.2, and so is a
//! solo time).

use std::io::{Read, Write};

use coloc_model::knowledge::trials::SetPair;
use coloc_model::knowledge::Record;
use coloc_model::profile::{AppIdentity, AppProfile, PlatformFingerprint};
use rusqlite::{Transaction, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::knowledge::put_record;
use crate::trials::put_pair;
use crate::{put_on, Store, StoreError};

/// The `format` field of an export.
pub const EXPORT_FORMAT: &str = "coloc-profiles";
/// The `version` field of an export this code writes and the newest it reads.
pub const EXPORT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Export {
    format: String,
    version: u32,
    profiles: Vec<AppProfile>,
}

/// A profile an import left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    pub identity: AppIdentity,
    pub platform: PlatformFingerprint,
    /// Says why, naming both platforms.
    pub reason: String,
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportReport {
    pub imported: Vec<AppIdentity>,
    pub refused: Vec<Refused>,
}

impl Store {
    /// Writes every stored profile as one JSON document; returns how many.
    pub fn export_json(&self, writer: impl Write) -> Result<usize, StoreError> {
        let profiles = self
            .bodies(
                "SELECT identity, body FROM profiles ORDER BY platform, app, identity",
                &[],
            )?
            .iter()
            .map(|(key, body)| self.decode(|| format!("profile {key}"), body))
            .collect::<Result<Vec<_>, _>>()?;
        let n = profiles.len();
        serde_json::to_writer_pretty(
            writer,
            &Export {
                format: EXPORT_FORMAT.into(),
                version: EXPORT_VERSION,
                profiles,
            },
        )
        .map_err(StoreError::Json)?;
        Ok(n)
    }

    /// Reads an export and stores the profiles measured on `this_platform`,
    /// replacing stored ones of the same app; every other profile is refused with a
    /// reason naming both platforms. All accepted profiles are written in one
    /// transaction: on an error nothing is imported.
    pub fn import_json(
        &self,
        reader: impl Read,
        this_platform: &PlatformFingerprint,
    ) -> Result<ImportReport, StoreError> {
        let export: Export =
            serde_json::from_reader(reader).map_err(|e| StoreError::Import(e.to_string()))?;
        if export.format != EXPORT_FORMAT {
            return Err(StoreError::Import(format!(
                "`format` is \"{}\", expected \"{EXPORT_FORMAT}\"",
                export.format
            )));
        }
        if export.version > EXPORT_VERSION {
            return Err(StoreError::Import(format!(
                "export version {} is newer than this coloc reads ({EXPORT_VERSION})",
                export.version
            )));
        }
        let mut report = ImportReport::default();
        let tx = self.conn.unchecked_transaction().map_err(|e| self.sql(e))?;
        for p in export.profiles {
            if p.platform == *this_platform {
                put_on(&tx, &p).map_err(|e| self.sql(e))?;
                report.imported.push(p.identity);
            } else {
                report.refused.push(Refused {
                    reason: format!(
                        "{} was measured on {}, not on this platform {}",
                        p.identity, p.platform, this_platform
                    ),
                    identity: p.identity,
                    platform: p.platform,
                });
            }
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(report)
    }
}

/// The `format` field of a knowledge export (`coloc knowledge export`).
pub const KNOWLEDGE_FORMAT: &str = "coloc-knowledge";
/// The `version` field of a knowledge export this code writes and the newest
/// it reads.
pub const KNOWLEDGE_VERSION: u32 = 1;

/// What one platform's store knows: its records and its profiles.
#[derive(Serialize, Deserialize)]
struct KnowledgeExport {
    format: String,
    version: u32,
    platform: PlatformFingerprint,
    records: Vec<Record>,
    #[serde(default)]
    profiles: Vec<AppProfile>,
    /// The pairs of `auto`'s trials per set of programs (none in an export
    /// of a coloc before they were kept).
    #[serde(default)]
    pairs: Vec<SetPair>,
}

/// What a knowledge import added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KnowledgeImport {
    pub records: usize,
    pub profiles: usize,
    pub pairs: usize,
}

impl Store {
    /// Writes what is known on `platform` (every record and profile) as one
    /// JSON document; returns how many records.
    pub fn export_knowledge(
        &self,
        platform: &PlatformFingerprint,
        writer: impl Write,
    ) -> Result<usize, StoreError> {
        let records = self.all_records(platform)?;
        let n = records.len();
        serde_json::to_writer_pretty(
            writer,
            &KnowledgeExport {
                format: KNOWLEDGE_FORMAT.into(),
                version: KNOWLEDGE_VERSION,
                platform: platform.clone(),
                records,
                profiles: self.for_platform(platform)?,
                pairs: self.pairs(platform)?,
            },
        )
        .map_err(StoreError::Json)?;
        Ok(n)
    }

    /// Reads a knowledge export made on `this_platform` and adds it, in one
    /// transaction (records already here are replaced by themselves, so an
    /// import twice adds nothing). An export of another platform is refused
    /// whole, naming both.
    pub fn import_knowledge(
        &self,
        reader: impl Read,
        this_platform: &PlatformFingerprint,
    ) -> Result<KnowledgeImport, StoreError> {
        let export: KnowledgeExport =
            serde_json::from_reader(reader).map_err(|e| StoreError::Import(e.to_string()))?;
        if export.format != KNOWLEDGE_FORMAT {
            return Err(StoreError::Import(format!(
                "`format` is \"{}\", expected \"{KNOWLEDGE_FORMAT}\"",
                export.format
            )));
        }
        if export.version > KNOWLEDGE_VERSION {
            return Err(StoreError::Import(format!(
                "knowledge export version {} is newer than this coloc reads ({KNOWLEDGE_VERSION})",
                export.version
            )));
        }
        let foreign = export.platform != *this_platform
            || export.profiles.iter().any(|p| p.platform != *this_platform);
        if foreign {
            return Err(StoreError::ForeignPlatform {
                found: export.platform.to_string(),
                here: this_platform.to_string(),
            });
        }
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        for r in &export.records {
            put_record(&tx, &this_platform.key(), r).map_err(|e| self.sql(e))?;
        }
        for p in &export.profiles {
            put_on(&tx, p).map_err(|e| self.sql(e))?;
        }
        for p in &export.pairs {
            put_pair(&tx, &this_platform.key(), p).map_err(|e| self.sql(e))?;
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(KnowledgeImport {
            records: export.records.len(),
            profiles: export.profiles.len(),
            pairs: export.pairs.len(),
        })
    }
}
