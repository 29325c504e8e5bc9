//! `libcoloc_spank.so`, the Slurm SPANK plugin (docs/slurm.md): on a Slurm
//! node it registers every task of a job step with the node's coloc daemon,
//! named `job<ID>.<step>`, the way `coloc exec` registers a command, and lets
//! the task run unmanaged when no daemon answers.
//!
//! The plugin is C (`c/coloc_spank.c`), built by build.rs against Slurm's
//! headers when they are installed; this crate embeds the result so that
//! `coloc spank-plugin PATH` can install it on a node.

/// The plugin, or why this build has none (Slurm's or json-c's headers were
/// missing when it was compiled).
pub fn plugin() -> Result<&'static [u8], &'static str> {
    static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcoloc_spank.so"));
    match env!("COLOC_SPANK_NOT_BUILT") {
        "" => Ok(BYTES),
        why => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built plugin is a shared object exporting SPANK's entry points.
    #[test]
    fn the_plugin_is_an_elf_shared_object_or_says_why_not() {
        match plugin() {
            Ok(bytes) => {
                assert_eq!(&bytes[..4], b"\x7fELF");
                let text = String::from_utf8_lossy(bytes);
                for symbol in [
                    "slurm_spank_init",
                    "slurm_spank_task_init",
                    "slurm_spank_task_exit",
                    "plugin_name",
                ] {
                    assert!(text.contains(symbol), "{symbol} is not exported");
                }
            }
            Err(why) => assert!(why.contains("not installed"), "{why}"),
        }
    }
}
