//! coloc as a node service (docs/service.md): `coloc daemon` runs the
//! Manager's loop with apps arriving over a control socket; `exec`, `attach`,
//! `release`, `status` and `policy set` talk to it; `spank-plugin` writes the
//! Slurm plugin that registers job steps with it (docs/slurm.md). The daemon itself lives
//! in the `coloc-daemon` crate; this is the command-line glue.

pub mod client;
pub mod daemon;
pub mod exec;
pub mod printable;
pub mod spank;
pub mod status;
pub mod top;
