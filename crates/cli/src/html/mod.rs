//! The HTML report: one self-contained page per run or comparison, for looking
//! at what happened before reading tables (the way SnuMAP's core maps and
//! Paraver's timelines are read).
//!
//! Problem: a trace holds every observation, plan and exit, but the text report
//! boils them down to a few numbers; where threads ran, when plans changed and
//! why a baseline's times have a heavy tail cannot be seen in a table.
//!
//! Approach: a pure function from traces (and the metrics computed from them,
//! the same as the text report's) to one page of HTML with inline SVG and CSS:
//! nothing fetched, no script, opens from a file.
//!
//! - [`timeline`] folds a trace's observations into at most
//!   [`timeline::MAX_BINS`] time bins (downsampling long runs, said on the page);
//! - [`coremap`] draws one row per CPU, coloured by app, with markers for
//!   arrivals, exits and plans, and hover texts (SVG `<title>`) naming the
//!   thread, the app instance and the plan in force;
//! - [`series`] charts per app over time (CPU use, CPUs granted, DoP, progress,
//!   parallel phase, context switches, migrations) with plotters' SVG backend;
//! - [`dist`] plots a comparison's per-policy distributions (box and strip
//!   plots on a log axis) and NTT with its interval, also with plotters.
//!
//! The page is well-formed XML as well as HTML, so tests can check its structure
//! with an XML reader. It lives in the CLI rather than in the model crate because
//! it is presentation, and plotters is a dependency only the binary needs.

mod coremap;
mod dist;
mod series;
mod timeline;

use std::fmt::Write;

use anyhow::Result;
use coloc_model::metrics::{Comparison, RunMetrics};
use coloc_model::Trace;

use coloc_harness::saved::SavedComparison;
use timeline::{Timeline, MAX_BINS};

/// App colours (matplotlib's tab10 and two more), by workload app index.
const PALETTE: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939",
];

/// The colour of workload app `app`.
fn colour(app: u32) -> &'static str {
    PALETTE[app as usize % PALETTE.len()]
}

/// `text` escaped for HTML and XML text and attribute values.
fn esc(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

/// A round tick step (1, 2 or 5 times a power of ten) giving at most about
/// `ticks` ticks over `span`.
fn nice_step(span: f64, ticks: u32) -> f64 {
    let raw = (span / f64::from(ticks)).max(1e-9);
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow)
}

const STYLE: &str = "body{font-family:sans-serif;margin:16px 24px;color:#222;max-width:1240px}\
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}\
.sub,.note{color:#555;font-size:13px;margin:2px 0}\
pre{font-size:12px;background:#f7f7f7;padding:8px;overflow-x:auto}\
.legend span{display:inline-block;margin-right:14px;font-size:13px}\
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}\
details{margin:8px 0}summary{cursor:pointer;font-weight:bold}\
svg{display:block;margin:4px 0}";

/// A whole page around `body`.
fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"generator\" content=\"coloc {}\"/><title>{}</title>\
         <style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    )
}

/// The page of one run: core map, per-app series, metrics and topology.
pub fn run_page(trace: &Trace, metrics: &RunMetrics) -> Result<String> {
    let h = &trace.header;
    let title = format!("{} under {} on {}", h.workload.name, h.policy, h.machine);
    let mut body = format!("<h1>{}</h1>\n", esc(&title));
    body += &run_body(trace, metrics, "run")?;
    Ok(page(&format!("coloc: {title}"), &body))
}

/// The page of a saved comparison: [`comparison_page`] with the first run of
/// each of its policies read back.
pub fn saved_comparison_page(saved: &SavedComparison, cmp: &Comparison) -> Result<String> {
    comparison_page(&saved.manifest.workload, cmp, &saved.first_runs()?)
}

/// The page of a comparison: the table, per-policy distributions and NTT, then
/// one run of each policy in detail (`runs`: policy, its first trace).
pub fn comparison_page(
    workload: &str,
    cmp: &Comparison,
    runs: &[(String, Trace, RunMetrics)],
) -> Result<String> {
    let title = format!(
        "{workload}: {} compared with {}",
        cmp.policies
            .iter()
            .map(|p| p.policy.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        cmp.baseline
    );
    let mut body = format!("<h1>{}</h1>\n", esc(&title));
    // The table as text, its legend as prose that wraps.
    let text = cmp.render();
    let (table, legend): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with('|'));
    let _ = writeln!(
        body,
        "<section id=\"comparison\"><h2>Comparison</h2><pre class=\"table\">{}</pre>\
         <p class=\"note\">{}</p>",
        esc(&table.join("\n")),
        esc(&legend.join(" "))
    );
    body += &dist::charts(cmp)?;
    body += "</section>\n";
    for (i, (policy, trace, metrics)) in runs.iter().enumerate() {
        let _ = writeln!(
            body,
            "<details class=\"policy-run\"{}><summary>{} — its first run in detail</summary>",
            if i == 0 { " open=\"open\"" } else { "" },
            esc(policy)
        );
        body += &run_body(trace, metrics, &format!("run{i}"))?;
        body += "</details>\n";
    }
    Ok(page(&format!("coloc: {title}"), &body))
}

/// Why each app got what it got: its decisions over the run with their
/// reasons and the trials' verdicts, from the trace's data (as `coloc why`
/// prints them, `coloc_model::reason::history`).
fn why_section(trace: &Trace, id: &str) -> String {
    let mut ids: Vec<coloc_model::AppId> = trace
        .events
        .iter()
        .filter_map(|e| match e {
            coloc_model::TraceEvent::Arrive { app, .. } => Some(*app),
            _ => None,
        })
        .collect();
    ids.sort();
    ids.dedup();
    let mut s =
        format!("<section class=\"why\" id=\"{id}-why\"><h2>Why each app got what it got</h2>\n");
    for app in ids {
        let h = coloc_model::explain::history::history(&trace.events, app);
        let name = trace
            .header
            .workload
            .apps
            .get(app.app as usize)
            .map_or("?", |a| a.name.as_str());
        let _ = writeln!(
            s,
            "<details class=\"app-why\"><summary>{} {app}</summary><pre>{}</pre></details>",
            esc(name),
            esc(&h.render())
        );
    }
    s += "</section>\n";
    s
}

/// A run's sections; `id` prefixes the element ids (several runs share a page).
fn run_body(trace: &Trace, metrics: &RunMetrics, id: &str) -> Result<String> {
    let h = &trace.header;
    let tl = Timeline::of(trace);
    let mut s = format!(
        "<p class=\"sub\">{} apps, {} CPUs, epoch {} ms{}; {} observations, {} plans</p>\n",
        h.workload.apps.len(),
        h.topology.cpus().len(),
        h.epoch.as_millis(),
        h.seed.map_or(String::new(), |s| format!(", seed {s}")),
        trace.observations().count(),
        tl.markers
            .iter()
            .filter(|m| m.kind == timeline::MarkerKind::Plan)
            .count()
            + tl.quiet_plans,
    );
    let _ = writeln!(
        s,
        "<section class=\"coremap\" id=\"{id}-coremap\"><h2>Core map</h2>{}{}\
         <p class=\"note\">Each row is a CPU; a stretch is coloured by the app whose threads \
         ran there longest and shaded by how busy the CPU was. Hover a stretch or a marker \
         for the thread, the app instance and the plan in force.</p>",
        downsample_note(&tl),
        legend(&tl)
    );
    s += &coremap::svg(&tl, &format!("{id}-map"));
    s += "</section>\n";
    let _ = writeln!(
        s,
        "<section class=\"series\" id=\"{id}-series\"><h2>Per app over time</h2>"
    );
    s += &series::charts(&tl)?;
    s += "</section>\n";
    s += &why_section(trace, id);
    let _ = writeln!(
        s,
        "<section class=\"metrics\" id=\"{id}-metrics\"><h2>Metrics</h2><pre>{}</pre></section>",
        esc(&metrics.render())
    );
    let _ = writeln!(
        s,
        "<section class=\"topology\" id=\"{id}-topology\"><h2>Machine: {}</h2><pre>{}</pre></section>",
        esc(&h.machine),
        esc(&h.topology.render_tree())
    );
    Ok(s)
}

/// Says how the pictures were reduced, or that they were not.
fn downsample_note(tl: &Timeline) -> String {
    let mut s = String::from("<p class=\"note downsample\">");
    if tl.downsampled() {
        let _ = write!(
            s,
            "Downsampled: {} observation intervals are shown as {} time bins of {:.3} s \
             (at most {MAX_BINS}); each stretch shows the instance that ran longest on that \
             CPU in its bins, and the series are averages per bin.",
            tl.intervals, tl.bins, tl.width
        );
    } else {
        let _ = write!(
            s,
            "Not downsampled: {} observation intervals in {} time bins of {:.3} s.",
            tl.intervals, tl.bins, tl.width
        );
    }
    if tl.quiet_plans > 0 {
        let _ = write!(
            s,
            " {} plans that changed nothing are not marked.",
            tl.quiet_plans
        );
    }
    s += "</p>";
    s
}

/// The apps' colours.
fn legend(tl: &Timeline) -> String {
    let mut s = String::from("<p class=\"legend\">");
    for (i, name) in tl.app_names.iter().enumerate() {
        let _ = write!(
            s,
            "<span><i style=\"background:{}\"></i>{}</span>",
            colour(i as u32),
            esc(name)
        );
    }
    s += "</p>";
    s
}
