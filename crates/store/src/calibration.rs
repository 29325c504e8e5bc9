//! Machine calibrations (NuPoCo §4.3: the memory system's service rates, measured
//! once per platform by `coloc calibrate`), filed by platform fingerprint beside
//! the profiles.

use coloc_model::calibration::MemoryCalibration;
use coloc_model::profile::PlatformFingerprint;
use rusqlite::{params, OptionalExtension};

use crate::{Store, StoreError};

impl Store {
    /// Stores the calibration of `platform`, replacing an earlier one. A
    /// calibration measured on a machine of another shape is refused.
    pub fn put_calibration(
        &self,
        platform: &PlatformFingerprint,
        calibration: &MemoryCalibration,
    ) -> Result<(), StoreError> {
        if calibration.topology_hash != platform.shape_hash {
            return Err(StoreError::CalibrationMismatch {
                path: self.path.clone(),
                platform: platform.to_string(),
                found: calibration.topology_hash,
            });
        }
        let body = serde_json::to_string(calibration).map_err(StoreError::Json)?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO calibrations (platform, updated, body) \
                 VALUES (?1, CAST(strftime('%s', 'now') AS INTEGER), ?2)",
                params![platform.key(), body],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The calibration of `platform`, if one was stored.
    pub fn calibration(
        &self,
        platform: &PlatformFingerprint,
    ) -> Result<Option<MemoryCalibration>, StoreError> {
        let body: Option<String> = self
            .conn
            .query_row(
                "SELECT body FROM calibrations WHERE platform = ?1",
                [platform.key()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        body.map(|b| {
            serde_json::from_str(&b).map_err(|source| StoreError::Record {
                path: self.path.clone(),
                what: format!("calibration of {platform}"),
                source,
            })
        })
        .transpose()
    }
}
