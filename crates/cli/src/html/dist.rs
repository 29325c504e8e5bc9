//! A comparison's distributions: per policy, every run's makespan, ART and
//! each app's mean wall time as points over a box (quartiles, whiskers to the
//! extremes) on an axis from 0, where a heavy tail (a baseline's barrier
//! collapses) shows at a glance; and NTT with its 95% interval. Drawn with
//! plotters.

use std::fmt::Write;

use anyhow::Result;
use coloc_model::metrics::Comparison;
use plotters::prelude::*;

use super::esc;

const SIZE: (u32, u32) = (1200, 220);

/// Policy colours (not the apps': here a colour is a policy).
const POLICY_RGB: [RGBColor; 6] = [
    RGBColor(90, 90, 90),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// The distribution charts and the NTT chart.
pub fn charts(cmp: &Comparison) -> Result<String> {
    let mut out = String::from(
        "<p class=\"note\">Each point is one run; boxes span the quartiles with the median \
         marked, whiskers reach the extremes. Axes start at 0, so a heavy tail stands out.</p>\n",
    );
    let mut figures: Vec<(String, String, Vec<Vec<f64>>)> = vec![
        (
            "makespan".into(),
            "Makespan per run (s)".into(),
            cmp.policies
                .iter()
                .map(|p| p.samples.makespan.clone())
                .collect(),
        ),
        (
            "art".into(),
            "Average response time per run (s)".into(),
            cmp.policies.iter().map(|p| p.samples.art.clone()).collect(),
        ),
    ];
    let apps: Vec<String> = cmp
        .policies
        .iter()
        .flat_map(|p| p.samples.app_wall.iter().map(|(n, _)| n.clone()))
        .fold(Vec::new(), |mut acc, n| {
            if !acc.contains(&n) {
                acc.push(n);
            }
            acc
        });
    for app in apps {
        let values = cmp
            .policies
            .iter()
            .map(|p| {
                p.samples
                    .app_wall
                    .iter()
                    .find(|(n, _)| *n == app)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
            .collect();
        figures.push((
            format!("app-{app}"),
            format!("{app}: mean wall time per run (s)"),
            values,
        ));
    }
    let names: Vec<&str> = cmp.policies.iter().map(|p| p.policy.as_str()).collect();
    for (id, title, values) in &figures {
        if values.iter().all(Vec::is_empty) {
            let _ = writeln!(out, "<p class=\"note\">{}: no data.</p>", esc(title));
            continue;
        }
        out += &strip_chart(id, title, &names, values)?;
        out.push('\n');
    }
    out += &ntt_chart(cmp)?;
    out.push('\n');
    Ok(out)
}

/// The top of a value axis from 0 that holds `values`; None without a positive one.
fn axis_top(values: impl Iterator<Item = f64>) -> Option<f64> {
    let hi = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    (hi > 0.0).then_some(hi * 1.1)
}

/// The `q` quantile of sorted `v` (linear between order statistics).
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match v.get(i + 1) {
        Some(next) => v[i] + (next - v[i]) * frac,
        None => v[i],
    }
}

/// A tick value with three significant digits.
fn significant(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().max(1e-12).log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// x axis labels: the policy at each whole position.
fn policy_label(names: &[&str], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        names
            .get(i as usize)
            .map_or(String::new(), |s| s.to_string())
    } else {
        String::new()
    }
}

/// A chart with one column per policy (named below it) and a value axis from
/// 0 to `hi`, its mesh drawn: what the strip plots and the NTT plot share.
fn policy_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    names: &[&str],
    hi: f64,
    y_desc: &str,
) -> Result<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    let n = names.len();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 14))
        .margin(6)
        .x_label_area_size(26)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..hi)?;
    let label = |x: &f64| policy_label(names, *x);
    chart
        .configure_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&label)
        .disable_x_mesh()
        .y_labels(8)
        .y_label_formatter(&|v: &f64| significant(*v))
        .y_desc(y_desc)
        .light_line_style(RGBColor(238, 238, 238))
        .draw()?;
    Ok(chart)
}

fn strip_chart(id: &str, title: &str, names: &[&str], values: &[Vec<f64>]) -> Result<String> {
    let Some(hi) = axis_top(values.iter().flatten().copied()) else {
        return Ok(String::new());
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = policy_chart(&root, title, names, hi, "s")?;
        for (i, v) in values.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let colour = POLICY_RGB[i % POLICY_RGB.len()];
            let x = i as f64;
            let mut sorted: Vec<f64> = v.iter().copied().filter(|v| *v > 0.0).collect();
            sorted.sort_by(f64::total_cmp);
            if sorted.is_empty() {
                continue;
            }
            let (q1, med, q3) = (
                quantile(&sorted, 0.25),
                quantile(&sorted, 0.5),
                quantile(&sorted, 0.75),
            );
            let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
            chart.draw_series([
                Rectangle::new([(x - 0.22, q1), (x + 0.22, q3)], colour.mix(0.15).filled()),
                Rectangle::new([(x - 0.22, q1), (x + 0.22, q3)], colour.stroke_width(1)),
            ])?;
            chart.draw_series([
                PathElement::new(
                    vec![(x - 0.22, med), (x + 0.22, med)],
                    colour.stroke_width(3),
                ),
                PathElement::new(vec![(x, min), (x, q1)], colour.stroke_width(1)),
                PathElement::new(vec![(x, q3), (x, max)], colour.stroke_width(1)),
            ])?;
            // The runs themselves, spread sideways in run order.
            let k = v.len().max(2) as f64 - 1.0;
            chart.draw_series(
                v.iter()
                    .enumerate()
                    .filter(|(_, y)| **y > 0.0)
                    .map(|(j, y)| {
                        let dx = if v.len() == 1 {
                            0.0
                        } else {
                            -0.15 + 0.3 * j as f64 / k
                        };
                        Circle::new((x + dx, *y), 4, colour.filled())
                    }),
            )?;
        }
        root.present()?;
    }
    Ok(svg.replacen(
        "<svg ",
        &format!("<svg class=\"chart dist\" data-figure=\"{}\" ", esc(id)),
        1,
    ))
}

/// NTT of each policy with its 95% interval; the baseline sits at 1.
fn ntt_chart(cmp: &Comparison) -> Result<String> {
    let names: Vec<&str> = cmp.policies.iter().map(|p| p.policy.as_str()).collect();
    let ends = cmp.policies.iter().flat_map(|p| {
        p.ntt
            .into_iter()
            .chain(p.ntt_ci95.into_iter().flat_map(|(a, b)| [a, b]))
    });
    let Some(hi) = axis_top(ends.chain([1.0])) else {
        return Ok("<p class=\"note\">NTT: no data.</p>".into());
    };
    let n = names.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!(
            "NTT: geometric-mean makespan / {}'s, with 95% interval (below 1 is better)",
            cmp.baseline
        );
        let mut chart = policy_chart(&root, &title, &names, hi, "NTT")?;
        chart.draw_series([PathElement::new(
            vec![(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
            RGBColor(150, 150, 150).stroke_width(1),
        )])?;
        for (i, p) in cmp.policies.iter().enumerate() {
            let colour = POLICY_RGB[i % POLICY_RGB.len()];
            let x = i as f64;
            if let (Some(v), Some((a, b))) = (p.ntt, p.ntt_ci95) {
                chart.draw_series([ErrorBar::new_vertical(
                    x,
                    a,
                    v,
                    b,
                    colour.stroke_width(2),
                    16,
                )])?;
            }
            if let Some(v) = p.ntt {
                chart.draw_series([Circle::new((x, v), 5, colour.filled())])?;
            }
        }
        root.present()?;
    }
    Ok(svg.replacen("<svg ", "<svg class=\"chart ntt\" ", 1))
}
