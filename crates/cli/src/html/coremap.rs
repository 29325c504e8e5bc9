//! The core map (SnuMAP-style): one row per CPU, time across, each stretch of
//! a row coloured by the app whose threads ran there and shaded by how busy the
//! CPU was; above it, lanes of markers for arrivals, exits and plans. Every
//! stretch and marker carries an SVG `<title>`, which browsers show on hover:
//! the thread, the app instance and the plan in force.
//!
//! Written as SVG by hand rather than with plotters: the map is only rectangles,
//! and plotters' elements cannot carry the `<title>` children that hovering needs.

use std::fmt::Write;

use super::timeline::{MarkerKind, Timeline};
use super::{colour, esc, nice_step};

/// Width of the whole picture and of the label column, in pixels.
const WIDTH: f64 = 1200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 10.0;
const LANE: f64 = 12.0;
const LANES: [(MarkerKind, &str); 3] = [
    (MarkerKind::Arrive, "arrive"),
    (MarkerKind::Exit, "exit"),
    (MarkerKind::Plan, "plan"),
];

/// The rows' background.
const BACKGROUND: &str = "#f4f4f4";

/// The frame around the rows: a tint nothing else on the page uses, so that the
/// map's area in a screenshot can be found by it.
const FRAME: &str = "#b4a078";

/// Busy shares are shown in this many steps of shade, so that neighbouring bins
/// of one app at about the same load merge into one rectangle.
const SHADES: f64 = 4.0;

/// Below this share of a bin a CPU counts as idle (left blank).
const IDLE: f64 = 0.05;

/// The map as an `<svg>` element with id `id`.
pub fn svg(tl: &Timeline, id: &str) -> String {
    let rows = tl.cpus.len().max(1);
    let row_h = (640.0 / rows as f64).clamp(4.0, 24.0).floor();
    let plot_w = WIDTH - LEFT - RIGHT;
    let top = 4.0 + LANE * LANES.len() as f64 + 6.0;
    let height = top + row_h * rows as f64 + 30.0;
    let span = tl.end().max(1e-9);
    let x = |t: f64| LEFT + plot_w * (t - tl.t0) / span;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="coremap" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="10">"#
    );
    // Marker lanes.
    for (lane, (kind, label)) in LANES.iter().enumerate() {
        let y = 4.0 + LANE * lane as f64;
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{label}</text><g class="markers" data-kind="{label}">"#,
            LEFT - 4.0,
            y + LANE - 3.0
        );
        for m in tl.markers.iter().filter(|m| m.kind == *kind) {
            let fill = m.app.map_or("#333", colour);
            let _ = write!(
                s,
                r#"<rect class="marker" x="{:.1}" y="{y}" width="3" height="{}" fill="{fill}"><title>{}</title></rect>"#,
                x(m.t) - 1.5,
                LANE - 2.0,
                esc(&m.text)
            );
        }
        s.push_str("</g>");
    }
    // One row per CPU.
    for (row, cpu) in tl.cpus.iter().enumerate() {
        let y = top + row_h * row as f64;
        if rows <= 32 || row % 4 == 0 {
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">cpu {cpu}</text>"#,
                LEFT - 4.0,
                y + row_h.min(10.0)
            );
        }
        let _ = write!(
            s,
            r##"<g class="cpu" data-cpu="{cpu}"><rect x="{LEFT}" y="{y}" width="{plot_w}" height="{row_h}" fill="{BACKGROUND}"/>"##
        );
        for run in runs(tl, row) {
            let (a, b) = (tl.bin_start(run.from), tl.bin_start(run.to));
            let _ = write!(
                s,
                r#"<rect class="run" x="{:.1}" y="{y}" width="{:.1}" height="{}" fill="{}" fill-opacity="{:.2}"><title>{}</title></rect>"#,
                x(a),
                (x(b) - x(a)).max(0.5),
                (row_h - 1.0).max(1.0),
                colour(run.app.app),
                run.shade / SHADES,
                esc(&run.title(tl, *cpu))
            );
        }
        s.push_str("</g>");
    }
    // Time axis.
    let axis_y = top + row_h * rows as f64;
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="#333"/>"##,
        LEFT + plot_w
    );
    let step = nice_step(span, 10);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{axis_y}" x2="{0:.1}" y2="{1}" stroke="#333"/><text x="{0:.1}" y="{2}" text-anchor="middle">{3}</text>"##,
            x(t),
            axis_y + 4.0,
            axis_y + 15.0,
            fmt_tick(t, step)
        );
        t += step;
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time (s)</text>"#,
        LEFT + plot_w / 2.0,
        axis_y + 27.0
    );
    // A crisp frame around the rows (on half pixels, so it covers whole ones),
    // over the axis line.
    let _ = write!(
        s,
        r#"<rect class="frame" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{FRAME}" shape-rendering="crispEdges"/>"#,
        LEFT - 0.5,
        top - 0.5,
        plot_w + 1.0,
        row_h * rows as f64 + 1.0
    );
    s.push_str("</svg>");
    s
}

fn fmt_tick(t: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{t:.0}")
    } else {
        format!("{t:.1}")
    }
}

/// Consecutive bins of one CPU where one instance ran most at one shade.
struct Run {
    from: usize,
    to: usize,
    app: coloc_model::AppId,
    shade: f64,
    busy: f64,
    /// Threads that ran longest in the run's bins, first seen first.
    tids: Vec<u32>,
}

impl Run {
    fn title(&self, tl: &Timeline, cpu: u32) -> String {
        let (a, b) = (tl.bin_start(self.from), tl.bin_start(self.to));
        let bins = (self.to - self.from) as f64;
        let mut text = format!(
            "cpu {cpu}, {a:.2}–{b:.2} s: {} ({}), cpu {:.0}% busy\nthread{} {}",
            tl.app_name(self.app.app),
            self.app,
            100.0 * self.busy / (bins * tl.width),
            if self.tids.len() > 1 { "s" } else { "" },
            self.tids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(plan) = tl.plan_at(self.app, a) {
            let _ = write!(text, "\nplan: {plan}");
        }
        text
    }
}

/// The CPU's bins as runs of one dominant instance and shade (idle bins left out).
fn runs(tl: &Timeline, row: usize) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for (bin, cell) in tl.cells[row].iter().enumerate() {
        let busy = cell.total();
        let share = busy / tl.width;
        let Some((app, _)) = cell.dominant().filter(|_| share >= IDLE) else {
            continue;
        };
        let shade = (share.min(1.0) * SHADES).ceil().max(1.0);
        let tid = cell.top.map(|(_, t, _)| t);
        match out.last_mut() {
            Some(r) if r.to == bin && r.app == app && r.shade == shade => {
                r.to = bin + 1;
                r.busy += busy;
                if let Some(t) = tid.filter(|t| !r.tids.contains(t) && r.tids.len() < 4) {
                    r.tids.push(t);
                }
            }
            _ => out.push(Run {
                from: bin,
                to: bin + 1,
                app,
                shade,
                busy,
                tids: tid.into_iter().collect(),
            }),
        }
    }
    out
}
