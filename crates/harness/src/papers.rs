//! `coloc bench paper resense`, `tranquilizer` and `tang`: which of a
//! paper's experiments run, at what scale and with how many seeds, run in
//! the simulator by `coloc_sim::papers` (docs/simulator.md, Reproducing the
//! papers), their results returned as data for the CLI to print beside the
//! paper's figures. NuPoCo's Table 2 is [`crate::nupoco_table`]'s.
//!
//! The experiments' own constants are here: each derives from its paper
//! (docs/simulator.md, Reproducing the papers).

use std::time::Duration;

use coloc_sim::papers::resense::{
    section_3_6, table_vi_cell, DynamicResult, MixResult, Options, Section36, TableVi, SECTION_3_6,
    TABLE_VI,
};
use coloc_sim::papers::tang::{
    atom_loads, nine_loads, table4, AtomLoad, Table4Row, CLOVERTOWN, WESTMERE,
};
use coloc_sim::papers::tranquilizer::{figure9_runs, table_v, Figure9, ProgramRow, TABLE_V};

use crate::HarnessError;

/// ReSense §3.6: native's runs per mix unless `seeds` says (its mean is
/// the reference the oracle and resense are measured against).
pub const NATIVE_SEEDS: u64 = 3;

/// Thread Tranquilizer: the paper's runs per configuration (§2.1.1).
pub const SEEDS: u64 = 10;

/// Tang et al.: work of the latency app in Table 4's runs, 10^9
/// instructions.
pub const TABLE4_GINSTR: f64 = 40.0;
/// In Figures 23–24's runs: AToM's learning (one slot per candidate) is then
/// about a quarter of the run, as the paper's 30 minutes of 2 hours.
pub const FIGURES_GINSTR: f64 = 150.0;
/// AToM's slot.
pub const SLOT: Duration = Duration::from_secs(1);

/// The entries of a paper's list `all` that `names` name (every entry
/// when none), in the order named; a name not in the list is refused
/// before anything runs, with `known`, what the list holds.
pub fn pick<T: Copy>(
    all: &[T],
    names: &[String],
    name_of: impl Fn(&T) -> &str,
    known: &'static str,
) -> Result<Vec<T>, HarnessError> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|e| name_of(e) == name)
                .copied()
                .ok_or_else(|| HarnessError::NotInPaper {
                    name: name.clone(),
                    known,
                })
        })
        .collect()
}

/// What `bench paper` asks of an experiment.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// ReSense: the platforms of §3.6 to run [default: all four].
    pub platforms: &'a [String],
    /// Thread Tranquilizer: the programs of Table V whose names contain one
    /// of these [default: all].
    pub programs: &'a [String],
    /// Thread Tranquilizer's runs per program and policy, ReSense's runs of
    /// native per mix [default: the paper's].
    pub seeds: Option<u64>,
    /// ReSense: static mixes per platform.
    pub mixes: u64,
    /// ReSense: dynamic workloads per cell of Table VI (0: none).
    pub workloads: u64,
    /// ReSense: the oracle's budget.
    pub max_configs: usize,
    /// Every model's work times this.
    pub scale: f64,
    /// The oracle's worker threads.
    pub threads: usize,
}

/// ReSense §3.6's results: per platform its mixes, and Table VI's cells.
#[derive(Debug)]
pub struct ResenseRuns {
    pub opts: Options,
    pub platforms: Vec<(Section36, Vec<MixResult>)>,
    pub table_vi: Vec<(TableVi, Vec<DynamicResult>)>,
}

/// ReSense §3.6 on the platforms asked (every one checked before anything
/// runs), then Table VI's cells of those platforms; `progress` is told of
/// each step.
pub fn resense(req: &Request<'_>, progress: &dyn Fn(&str)) -> Result<ResenseRuns, HarnessError> {
    let chosen = pick(
        &SECTION_3_6,
        req.platforms,
        |s| s.platform,
        "§3.6's (yorkfield, harpertown, xeon32, opteron48)",
    )?;
    if req.mixes < 1 {
        return Err(HarnessError::NoMixCount);
    }
    let opts = Options {
        native_seeds: req.seeds.unwrap_or(NATIVE_SEEDS).max(1),
        max_configs: req.max_configs.max(1),
        scale: req.scale,
        threads: req.threads,
    };
    let mut platforms = Vec::new();
    for s in &chosen {
        let results = section_3_6(s, req.mixes, &opts, progress)?;
        platforms.push((*s, results));
    }
    let mut table_vi = Vec::new();
    if req.workloads > 0 {
        for cell in TABLE_VI
            .iter()
            .filter(|c| chosen.iter().any(|s| s.platform == c.platform))
        {
            let results = table_vi_cell(cell, req.workloads, &opts, progress)?;
            table_vi.push((*cell, results));
        }
    }
    Ok(ResenseRuns {
        opts,
        platforms,
        table_vi,
    })
}

/// Thread Tranquilizer's results: Table V's programs alone, and Figure 9.
#[derive(Debug)]
pub struct TranquilizerRuns {
    /// Runs per program and policy (at least 2, for a spread).
    pub seeds: u64,
    pub programs: Vec<ProgramRow>,
    pub figure9: Figure9,
}

/// Table V's programs asked, each alone under native and tranquilizer,
/// then Figure 9's co-run.
pub fn tranquilizer(
    req: &Request<'_>,
    progress: &dyn Fn(&str),
) -> Result<TranquilizerRuns, HarnessError> {
    let seeds = req.seeds.unwrap_or(SEEDS).max(2);
    let chosen: Vec<_> = TABLE_V
        .iter()
        .filter(|p| {
            req.programs.is_empty() || req.programs.iter().any(|n| p.model.contains(n.as_str()))
        })
        .copied()
        .collect();
    if chosen.is_empty() {
        return Err(HarnessError::NoProgram {
            programs: req.programs.join(","),
        });
    }
    let mut programs = Vec::new();
    for p in &chosen {
        progress(&format!("{} alone, {} threads", p.model, p.threads));
        programs.extend(table_v(std::slice::from_ref(p), seeds, req.scale)?);
    }
    progress("Figure 9");
    let figure9 = figure9_runs(seeds, req.scale)?;
    Ok(TranquilizerRuns {
        seeds,
        programs,
        figure9,
    })
}

/// Tang et al.'s results: Table 4's rows and Figures 23–24's loads.
#[derive(Debug)]
pub struct TangRuns {
    pub table4: Vec<Table4Row>,
    pub figures: Vec<AtomLoad>,
    pub scale: f64,
}

/// Table 4 on Clovertown, then AToM against every static mapping on
/// Clovertown (Figure 23) and Westmere (Figure 24).
pub fn tang(req: &Request<'_>, progress: &dyn Fn(&str)) -> Result<TangRuns, HarnessError> {
    progress("Table 4 (clovertown)");
    let table4 = table4(TABLE4_GINSTR * req.scale)?;
    let mut figures = Vec::new();
    for m in [CLOVERTOWN, WESTMERE] {
        progress(&format!(
            "Figure {} ({})",
            if m.platform == "clovertown" { 23 } else { 24 },
            m.platform
        ));
        figures.extend(atom_loads(
            m,
            &nine_loads(),
            FIGURES_GINSTR * req.scale,
            SLOT,
        )?);
    }
    Ok(TangRuns {
        table4,
        figures,
        scale: req.scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(platforms: &'a [String], programs: &'a [String]) -> Request<'a> {
        Request {
            platforms,
            programs,
            seeds: None,
            mixes: 1,
            workloads: 0,
            max_configs: 8,
            scale: 0.02,
            threads: 1,
        }
    }

    /// Names the papers do not have are refused before anything runs,
    /// each error naming what there is.
    #[test]
    fn what_the_paper_lacks_is_refused_by_name() {
        let nowhere = ["nowhere".to_string()];
        let e = resense(&request(&nowhere, &[]), &|_| {}).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--platforms: `nowhere` is not one of §3.6's (yorkfield, harpertown, xeon32, opteron48)"
        );
        let e = tranquilizer(&request(&[], &nowhere), &|_| {}).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--programs nowhere: none of Table V's programs matches"
        );
        let mut none = request(&[], &[]);
        none.mixes = 0;
        assert_eq!(
            resense(&none, &|_| {}).unwrap_err().to_string(),
            "--mixes must be at least 1"
        );
    }

    /// One of Table V's programs at a fiftieth of its work, through the
    /// library: one seed asked is raised to two (a spread needs two), its
    /// rows and Figure 9's co-run, each step told.
    #[test]
    fn one_program_of_table_v_runs_with_figure_9() {
        let programs = [TABLE_V[0].model.to_string()];
        let mut req = request(&[], &programs);
        req.seeds = Some(1);
        let steps = std::sync::Mutex::new(Vec::new());
        let runs = tranquilizer(&req, &|s| steps.lock().unwrap().push(s.to_string())).unwrap();
        assert_eq!(runs.seeds, 2);
        assert!(!runs.programs.is_empty());
        let steps = steps.into_inner().unwrap();
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert!(steps[0].starts_with(TABLE_V[0].model) && steps[1] == "Figure 9");
    }
}
