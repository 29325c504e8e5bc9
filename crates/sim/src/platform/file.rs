//! TOML platform files: a built-in, a synthetic description or an externally
//! read topology (hwloc XML), with any figure overridden.
//!
//! ```toml
//! name = "lab-server"                 # required
//! description = "our 2-socket box"    # optional
//! base = "westmere"                   # a built-in to start from, or
//! # topology = "package:2 numa:1 l3(20M):1 core:8"   # a synthetic description
//! # (neither: the topology the caller passes, e.g. read from hwloc XML)
//!
//! [params]                            # any subset of Params
//! mc_bandwidth_gbs = 18.0
//! mem_latency_ns = 80
//! ```
//!
//! Unknown keys are errors naming the key (serde's `deny_unknown_fields`), and
//! every figure is validated, so a misspelt `freq_ghs` never silently runs with
//! a default.

use coloc_model::topology::{SyntheticError, Topology};
use serde::Deserialize;

use super::{platform, platform_names, Params, Platform};

/// Why a platform file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("platform file: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("platform file: `base`: unknown platform `{0}` (built-in platforms: {names})", names = platform_names())]
    UnknownBase(String),
    #[error("platform file: give at most one of `base` and `topology`")]
    BaseAndTopology,
    #[error("platform file: `topology`: {0}")]
    Synthetic(#[from] SyntheticError),
    #[error("platform file: no topology: give `base` or `topology`, or load one (hwloc XML) and pass it")]
    NoTopology,
    #[error("platform file: `params.{field}` {reason}")]
    Invalid { field: String, reason: String },
}

/// Overrides of [`Params`]; absent fields keep the base's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamOverrides {
    pub freq_ghz: Option<f64>,
    pub llc_hit_cycles: Option<f64>,
    pub mem_latency_ns: Option<f64>,
    pub remote_latency_ns: Option<f64>,
    pub mc_bandwidth_gbs: Option<f64>,
    pub link_bandwidth_gbs: Option<f64>,
    pub xfer_near_ns: Option<f64>,
    pub xfer_far_ns: Option<f64>,
    pub barrier_ns: Option<f64>,
    pub slice_us: Option<f64>,
    pub balance_ms: Option<f64>,
    pub jitter_per_s: Option<f64>,
}

impl ParamOverrides {
    fn apply(&self, p: &mut Params) {
        let pairs: [(&mut f64, Option<f64>); 12] = [
            (&mut p.freq_ghz, self.freq_ghz),
            (&mut p.llc_hit_cycles, self.llc_hit_cycles),
            (&mut p.mem_latency_ns, self.mem_latency_ns),
            (&mut p.remote_latency_ns, self.remote_latency_ns),
            (&mut p.mc_bandwidth_gbs, self.mc_bandwidth_gbs),
            (&mut p.link_bandwidth_gbs, self.link_bandwidth_gbs),
            (&mut p.xfer_near_ns, self.xfer_near_ns),
            (&mut p.xfer_far_ns, self.xfer_far_ns),
            (&mut p.barrier_ns, self.barrier_ns),
            (&mut p.slice_us, self.slice_us),
            (&mut p.balance_ms, self.balance_ms),
            (&mut p.jitter_per_s, self.jitter_per_s),
        ];
        for (slot, v) in pairs {
            if let Some(v) = v {
                *slot = v;
            }
        }
    }
}

/// A parsed platform file, not yet resolved to a topology.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformFile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub topology: Option<String>,
    #[serde(default)]
    pub params: ParamOverrides,
}

impl PlatformFile {
    pub fn parse(text: &str) -> Result<Self, PlatformError> {
        Ok(toml::from_str(text)?)
    }

    /// Builds the platform. `external` is a topology the caller read elsewhere
    /// (hwloc XML); it is used when the file names neither `base` nor `topology`.
    pub fn resolve(&self, external: Option<Topology>) -> Result<Platform, PlatformError> {
        let mut p = match (&self.base, &self.topology) {
            (Some(_), Some(_)) => return Err(PlatformError::BaseAndTopology),
            (Some(b), None) => platform(b).ok_or_else(|| PlatformError::UnknownBase(b.clone()))?,
            (None, Some(desc)) => Platform::from_topology(Topology::synthetic(&self.name, desc)?),
            (None, None) => Platform::from_topology(external.ok_or(PlatformError::NoTopology)?),
        };
        p.name.clone_from(&self.name);
        p.topology.name.clone_from(&self.name);
        if let Some(d) = &self.description {
            p.description.clone_from(d);
        }
        p.source = format!("platform file over: {}", p.source);
        self.params.apply(&mut p.params);
        p.params.validate()?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_over_a_base() {
        let f = PlatformFile::parse(
            "name = \"lab\"\nbase = \"westmere\"\n[params]\nmc_bandwidth_gbs = 18.0\nmem_latency_ns = 80\n",
        )
        .unwrap();
        let p = f.resolve(None).unwrap();
        assert_eq!(p.name, "lab");
        assert_eq!(p.topology.cpus().len(), 12);
        assert_eq!(p.params.mc_bandwidth_gbs, 18.0);
        assert_eq!(p.params.mem_latency_ns, 80.0);
        // Untouched figures keep Westmere's.
        assert_eq!(p.params.freq_ghz, 2.8);
    }

    #[test]
    fn external_topology_gets_defaults() {
        let topo = Topology::synthetic("xml", "package:1 l3(8M):1 core:4").unwrap();
        let p = PlatformFile::parse("name = \"box\"")
            .unwrap()
            .resolve(Some(topo))
            .unwrap();
        assert_eq!(p.params, Params::default());
        assert_eq!(p.topology.cpus().len(), 4);
    }

    /// Each bad file and a fragment its error must contain (the field it names).
    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                "name = \"x\"\nbase = \"westmere\"\n[params]\nfreq_ghs = 2.0",
                "freq_ghs",
            ),
            ("name = \"x\"\nbase = \"pentium\"", "pentium"),
            (
                "name = \"x\"\nbase = \"westmere\"\ntopology = \"core:2\"",
                "at most one",
            ),
            ("name = \"x\"\ntopology = \"core:two\"", "topology"),
            ("name = \"x\"", "no topology"),
            (
                "name = \"x\"\nbase = \"westmere\"\n[params]\nfreq_ghz = -1",
                "params.freq_ghz",
            ),
            (
                "name = \"x\"\nbase = \"westmere\"\n[params]\nmc_bandwidth_gbs = 0",
                "params.mc_bandwidth_gbs",
            ),
            ("base = \"westmere\"", "name"),
            ("name = \"x\"\nbse = \"westmere\"", "bse"),
        ];
        for (text, want) in cases {
            let err = PlatformFile::parse(text)
                .and_then(|f| f.resolve(None))
                .expect_err(text);
            let msg = err.to_string();
            assert!(msg.contains(want), "{text:?}: {msg}");
        }
    }
}
