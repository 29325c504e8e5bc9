//! `coloc topo`: the machine as coloc sees it.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_model::topology::hwloc::parse_hwloc_xml;

#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Print JSON instead of a tree.
    #[arg(long)]
    json: bool,
    /// Read an hwloc XML file (`lstopo --of xml`) instead of this machine's sysfs.
    #[arg(long, value_name = "FILE")]
    xml: Option<PathBuf>,
}

pub fn main(args: TopoArgs) -> Result<()> {
    let topo = match &args.xml {
        Some(path) => {
            let text =
                coloc_model::user_file::read_user_text(path, coloc_model::user_file::MAX_HWLOC)?;
            parse_hwloc_xml(&path.display().to_string(), &text)
                .with_context(|| format!("parsing {}", path.display()))?
        }
        None => coloc_harness::target::host_topology()?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&topo)?);
    } else {
        print!("{}", topo.render_tree());
        println!("\nShared resources (innermost first):");
        for r in topo.shared_resources() {
            let also = if r.same_as.is_empty() {
                String::new()
            } else {
                format!(
                    " (= {})",
                    r.same_as
                        .iter()
                        .map(|k| k.label())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let sets: Vec<String> = r.instances.iter().map(|c| c.to_list()).collect();
            println!(
                "  {}{also}: {} instance(s), {} core(s) each: {}",
                r.kind.label(),
                r.instances.len(),
                r.cores_per_instance,
                sets.join(" | ")
            );
        }
    }
    Ok(())
}
