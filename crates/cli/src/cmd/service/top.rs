//! `coloc top`: the daemon's status live in a terminal (ratatui), refreshed
//! every `--interval`: the policy and its last decision, a per-CPU view of
//! which managed app is planned on each CPU and how many of its threads ran
//! there last (`/proc/<pid>/task/<tid>/stat`, field 39), and the apps' table
//! of `coloc status`. `q`, Esc or Ctrl-C quits.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use coloc_daemon::protocol::Status;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::Frame;

use super::client::SocketArgs;
use super::printable::{printable, TEXT_WIDTH};
use super::status::{row, status, COLUMNS};

#[derive(Debug, Args)]
pub struct TopArgs {
    /// How often to ask the daemon.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    #[command(flatten)]
    pub socket: SocketArgs,
}

/// One line per CPU: the apps planned there and the threads that ran there.
fn cpu_lines(s: &Status) -> Vec<String> {
    let cpus: Vec<u32> = s
        .cpus
        .parse::<coloc_model::CpuSet>()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let mut running: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut planned: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for a in &s.apps {
        let mut per_cpu: BTreeMap<u32, usize> = BTreeMap::new();
        for c in coloc_linux::machine::last_cpus(Path::new("/proc"), a.pid) {
            *per_cpu.entry(c).or_default() += 1;
        }
        for (c, n) in per_cpu {
            running
                .entry(c)
                .or_default()
                .push(format!("{}×{n}", printable(&a.name, 64)));
        }
        if let Some(p) = &a.plan {
            for c in p.placement.cpus().iter() {
                planned.entry(c).or_default().push(printable(&a.name, 64));
            }
        }
    }
    cpus.iter()
        .map(|c| {
            let list =
                |m: &BTreeMap<u32, Vec<String>>| m.get(c).map_or("-".to_string(), |v| v.join(" "));
            format!(
                "CPU {c:>3}  planned: {:<24} threads there: {}",
                list(&planned),
                list(&running)
            )
        })
        .collect()
}

fn draw(f: &mut Frame<'_>, s: &Status) {
    let cpus = cpu_lines(s);
    let [head, cpu_area, apps_area] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(cpus.len() as u16 + 2),
        Constraint::Min(3),
    ])
    .areas(f.area());
    let header = vec![
        Line::from(format!(
            "coloc daemon {}  up {:.0}s  policy {}  CPUs {}  (q quits)",
            s.daemon_pid,
            s.uptime_secs,
            printable(&s.policy, 64),
            printable(&s.cpus, TEXT_WIDTH)
        )),
        Line::from(format!(
            "last decision: {}",
            printable(&s.last_reason, TEXT_WIDTH)
        )),
    ];
    f.render_widget(Paragraph::new(header), head);
    let cpu_text: Vec<Line> = cpus.into_iter().map(Line::from).collect();
    f.render_widget(
        Paragraph::new(cpu_text).block(Block::bordered().title("per CPU")),
        cpu_area,
    );
    let rows = s.apps.iter().map(|a| Row::new(row(a)));
    let widths = [
        Constraint::Length(4),
        Constraint::Length(12),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(12),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Length(4),
        Constraint::Length(10),
        Constraint::Min(10),
    ];
    let table = Table::new(rows, widths)
        .header(Row::new(COLUMNS.to_vec()))
        .block(Block::bordered().title(format!("{} managed app(s)", s.apps.len())));
    f.render_widget(table, apps_area);
}

pub fn main(a: TopArgs) -> Result<()> {
    use std::io::IsTerminal;
    // ratatui panics on what is not a terminal.
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "coloc top draws on a terminal, and its input or output is not one \
             (`coloc status` prints the same as text)"
        );
    }
    // Fails before the terminal is taken when no daemon answers.
    let mut last = status(&a.socket)?;
    let mut terminal = ratatui::init();
    let result = (|| -> Result<()> {
        let mut next = Instant::now();
        loop {
            if Instant::now() >= next {
                last = status(&a.socket)?;
                terminal.draw(|f| draw(f, &last))?;
                next = Instant::now() + a.interval;
            }
            let wait = next.saturating_duration_since(Instant::now());
            if event::poll(wait)? {
                if let Event::Key(k) = event::read()? {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result
}
