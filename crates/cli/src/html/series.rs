//! Per-app series over time, one chart per quantity, one line per app in the
//! core map's colours, drawn with plotters' SVG backend. A line breaks where the
//! app had no samples (not arrived yet, or gone).

use anyhow::Result;
use plotters::prelude::*;

use super::timeline::{AppBin, Timeline};
use super::PALETTE;

/// Size of one chart, in pixels.
const SIZE: (u32, u32) = (1200, 210);

/// A quantity to chart: its title, y-axis label and how to read it from a bin.
struct Quantity {
    id: &'static str,
    title: &'static str,
    unit: &'static str,
    value: fn(&AppBin) -> Option<f64>,
}

const QUANTITIES: [Quantity; 7] = [
    Quantity {
        id: "cores",
        title: "CPU use (cores busy)",
        unit: "cores",
        value: |b| Some(b.cores),
    },
    Quantity {
        id: "granted",
        title: "CPUs granted by the plan in force",
        unit: "CPUs",
        value: |b| b.granted.map(|g| g as f64),
    },
    Quantity {
        id: "dop",
        title: "Degree of parallelism acknowledged (OpenMP threads)",
        unit: "threads",
        value: |b| b.dop.map(f64::from),
    },
    Quantity {
        id: "progress",
        title: "Progress (OpenMP worksharing iterations per second)",
        unit: "iterations/s",
        value: |b| b.iterations,
    },
    Quantity {
        id: "parallel",
        title: "Phase: share of time inside a parallel region (0 = serial)",
        unit: "share",
        value: |b| b.parallel.map(|p| p.min(1.0)),
    },
    Quantity {
        id: "switches",
        title: "Context switches per second",
        unit: "switches/s",
        value: |b| Some(b.switches),
    },
    Quantity {
        id: "migrations",
        title: "Migrations per second",
        unit: "migrations/s",
        value: |b| b.migrations,
    },
];

/// Every quantity some app has data for, as SVG charts; a note for the rest.
pub fn charts(tl: &Timeline) -> Result<String> {
    let mut out = String::new();
    let mut missing = Vec::new();
    for q in &QUANTITIES {
        let lines = lines(tl, q);
        if lines.iter().all(|(_, segs)| segs.is_empty()) {
            missing.push(q.title);
            continue;
        }
        out += &chart(tl, q, &lines)?;
        out.push('\n');
    }
    if !missing.is_empty() {
        out += &format!(
            "<p class=\"note\">No data in this trace for: {}.</p>\n",
            super::esc(&missing.join("; "))
        );
    }
    Ok(out)
}

/// Per app: its name and its line, split where it has no samples.
type Lines = Vec<(String, Vec<Vec<(f64, f64)>>)>;

fn lines(tl: &Timeline, q: &Quantity) -> Lines {
    tl.apps
        .iter()
        .enumerate()
        .map(|(app, bins)| {
            let mut segs: Vec<Vec<(f64, f64)>> = Vec::new();
            let mut open = false;
            for (bin, b) in bins.iter().enumerate() {
                match (b.seen, (q.value)(b)) {
                    (true, Some(v)) if v.is_finite() => {
                        let t = tl.bin_start(bin) + tl.width / 2.0;
                        if !open {
                            segs.push(Vec::new());
                            open = true;
                        }
                        segs.last_mut().expect("pushed").push((t, v));
                    }
                    _ => open = false,
                }
            }
            (tl.app_name(app as u32), segs)
        })
        .collect()
}

fn chart(tl: &Timeline, q: &Quantity, lines: &Lines) -> Result<String> {
    let ymax = lines
        .iter()
        .flat_map(|(_, segs)| segs.iter().flatten())
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(q.title, ("sans-serif", 14))
            .margin(6)
            .x_label_area_size(30)
            .y_label_area_size(64)
            .build_cartesian_2d(tl.t0..tl.end(), 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(q.unit)
            .light_line_style(RGBColor(238, 238, 238))
            .draw()?;
        for (app, (name, segs)) in lines.iter().enumerate() {
            let colour = app_rgb(app);
            for (i, seg) in segs.iter().enumerate() {
                let style = colour.stroke_width(2);
                let drawn = chart.draw_series(LineSeries::new(seg.iter().copied(), style))?;
                if i == 0 {
                    drawn.label(name.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], colour.stroke_width(2))
                    });
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .draw()?;
        root.present()?;
    }
    Ok(svg.replacen(
        "<svg ",
        &format!("<svg class=\"chart\" data-quantity=\"{}\" ", q.id),
        1,
    ))
}

/// The palette colour of app index `app` for plotters.
pub(super) fn app_rgb(app: usize) -> RGBColor {
    let hex = PALETTE[app % PALETTE.len()].trim_start_matches('#');
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
    RGBColor(byte(0), byte(2), byte(4))
}
