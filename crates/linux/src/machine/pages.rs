//! Interleaving a running app's memory (Thread Tranquilizer §3's RR/random
//! placement; docs/safety.md, Memory of a running app).
//!
//! Problem: `set_mempolicy` acts only on the calling thread, so coloc cannot
//! change the policy of an app that already runs, and its pages already sit
//! where they were first touched. Finding them costs: the kernel walks the
//! app's page tables for every read of `/proc/<pid>/numa_maps` and for every
//! page `move_pages` is asked about, so re-walking a 192 MiB app at every
//! 100 ms epoch took several percent of a core (docs/policies/tranquilizer.md,
//! Agent CPU use).
//!
//! Approach: move the pages in passes, then rest. A pass reads the app's
//! private writable mappings with resident anonymous pages once, from
//! `numa_maps` (which mappings hold pages, and their page size) and
//! `/proc/<pid>/maps` (where each ends), and walks them over the following
//! applies, up to a budget of pages each (the rate limit): it asks the kernel
//! where each page is (`move_pages` without nodes), journals where the ones
//! that must move were, then moves them, page `a` to node
//! `nodes[(a / page size) mod n]`, so a page's node depends only on its
//! address and a second pass moves nothing. When a pass reaches the end of
//! its mappings the mover rests for [`REST`] (Thread Tranquilizer's pass, §3)
//! before the next pass reads `numa_maps` again, so pages allocated meanwhile
//! (under the app's own, local, policy) are interleaved within a pass of the
//! policy. Other nodes start a new pass at once. A revert, and the app's
//! release, move every page back to the node it was on and end the pass.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use coloc_model::trace::PageMoves;
use nix::errno::Errno;
use serde::{Deserialize, Serialize};

use super::sys;
use super::tasks::ProcRoot;

/// Pages looked at per apply: 64 MiB of 4 KiB pages (640 MiB/s at 100 ms epochs).
pub(crate) const PAGES_PER_APPLY: usize = 16_384;

/// Pages per `move_pages` call.
const BATCH: usize = 4096;

/// The rest between the end of one pass and the start of the next.
pub(crate) const REST: Duration = Duration::from_secs(5);

/// A run of consecutive pages that were on one node before coloc moved them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PageRun {
    pub start: u64,
    pub pages: u64,
    pub page_bytes: u64,
    pub node: i32,
}

/// A private writable mapping with resident anonymous pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Vma {
    pub start: u64,
    pub end: u64,
    pub page_bytes: u64,
    /// `numa_maps`'s policy field (`default`, `interleave:0-1`, ...).
    pub policy: String,
    /// Resident pages per node (`N<node>=<pages>`).
    pub per_node: BTreeMap<u32, u64>,
}

/// The mappings whose pages `move_pages` may move: private (`p`) and writable
/// in `maps`, with anonymous pages in `numa_maps`.
pub(crate) fn movable_vmas(maps: &str, numa_maps: &str) -> Vec<Vma> {
    let mut ends = BTreeMap::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if perms.as_bytes().get(1) == Some(&b'w') && perms.as_bytes().get(3) == Some(&b'p') {
            ends.insert(a, b);
        }
    }
    numa_maps
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let start = u64::from_str_radix(f.next()?, 16).ok()?;
            let end = *ends.get(&start)?;
            let policy = f.next()?.to_string();
            let (mut anon, mut page_kb, mut per_node) = (0, 4, BTreeMap::new());
            for tok in f {
                let Some((k, v)) = tok.split_once('=') else {
                    continue;
                };
                match (k, v.parse::<u64>()) {
                    ("anon", Ok(n)) => anon = n,
                    ("kernelpagesize_kB", Ok(n)) => page_kb = n,
                    (k, Ok(n)) if k.starts_with('N') => {
                        if let Ok(node) = k[1..].parse() {
                            per_node.insert(node, n);
                        }
                    }
                    _ => {}
                }
            }
            (anon > 0).then(|| Vma {
                start,
                end,
                page_bytes: page_kb * 1024,
                policy,
                per_node,
            })
        })
        .collect()
}

/// The node page `addr` goes to when interleaved over `nodes`.
pub(crate) fn rr_node(addr: u64, page_bytes: u64, nodes: &[u32]) -> i32 {
    nodes[((addr / page_bytes) % nodes.len() as u64) as usize] as i32
}

/// Why a walk stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PagesError {
    #[error("reading /proc/{pid}/{file}: {source}")]
    Read {
        pid: u32,
        file: &'static str,
        source: std::io::Error,
    },
    #[error("move_pages on pid {pid}: {errno}")]
    MovePages { pid: u32, errno: Errno },
    /// The originals of the pages about to move could not be journaled
    /// (the journal's own error: this module is below the journal, which
    /// stores its `PageRun`s, so it does not name the journal's type).
    #[error("{0}: no page moved")]
    Journal(Box<dyn std::error::Error + Send + Sync>),
}

/// One app's pages walked in passes, and what was moved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageMover {
    /// The pass under way; None between passes.
    pass: Option<Pass>,
    /// When the last pass ended and over which nodes (the next pass over
    /// them may begin [`REST`] after).
    ended: Option<(Instant, Vec<u32>)>,
    /// Where moved pages were, in the order they were moved.
    originals: Vec<PageRun>,
}

/// A pass: the mappings `numa_maps` listed at its start, walked in order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pass {
    nodes: Vec<u32>,
    vmas: Vec<Vma>,
    /// Where the next walk starts.
    cursor: u64,
}

impl PageMover {
    /// Whether coloc moved some page that it has not put back.
    pub fn has_moved(&self) -> bool {
        !self.originals.is_empty()
    }

    /// Whether a walk over `nodes` is due at `now`: within a pass over the
    /// same nodes, or once the rest after the last pass is over (at once for
    /// other nodes, or when there was none).
    fn due(&self, nodes: &[u32], now: Instant) -> bool {
        match (&self.pass, &self.ended) {
            (Some(p), _) => p.nodes == nodes,
            (None, Some((at, over))) => over != nodes || now.saturating_duration_since(*at) >= REST,
            (None, None) => true,
        }
    }

    /// Looks at up to `budget` resident pages of `pid` from where the last
    /// walk of the pass stopped and moves those not on their round-robin node
    /// among `nodes`; None while resting between passes. A pass begins with
    /// a read of `maps` and `numa_maps`. `journal` receives the originals of
    /// the pages about to move and must have them on disk when it returns.
    pub fn interleave<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        &mut self,
        proc: &ProcRoot,
        pid: u32,
        nodes: &[u32],
        budget: usize,
        now: Instant,
        mut journal: impl FnMut(&[PageRun]) -> Result<(), E>,
    ) -> Result<Option<PageMoves>, PagesError> {
        if self.pass.as_ref().is_some_and(|p| p.nodes != nodes) {
            self.pass = None;
        }
        if !self.due(nodes, now) {
            return Ok(None);
        }
        let mut out = PageMoves {
            action: "interleave".into(),
            nodes: nodes.to_vec(),
            ..PageMoves::default()
        };
        if nodes.is_empty() {
            return Ok(Some(out));
        }
        let pass = match self.pass.take() {
            Some(p) => p,
            None => {
                let read = |file| {
                    proc.process_file(pid, file)
                        .map_err(|source| PagesError::Read { pid, file, source })
                };
                Pass {
                    nodes: nodes.to_vec(),
                    vmas: movable_vmas(&read("maps")?, &read("numa_maps")?),
                    cursor: 0,
                }
            }
        };
        let pages = pages_from(&pass.vmas, pass.cursor, budget);
        // The pass ends with the walk that reaches the end of its mappings.
        if pages.len() < budget {
            self.ended = Some((now, pass.nodes));
        } else if let Some(&(addr, page_bytes)) = pages.last() {
            self.pass = Some(Pass {
                cursor: addr + page_bytes,
                ..pass
            });
        }
        for chunk in pages.chunks(BATCH) {
            let addrs: Vec<u64> = chunk.iter().map(|&(a, _)| a).collect();
            let mut status = vec![0; addrs.len()];
            sys::move_pages(pid, &addrs, None, &mut status)
                .map_err(|errno| PagesError::MovePages { pid, errno })?;
            let mut runs: Vec<PageRun> = Vec::new();
            let (mut move_addrs, mut targets) = (Vec::new(), Vec::new());
            for (&(addr, page_bytes), &node) in chunk.iter().zip(&status) {
                if node < 0 {
                    continue;
                }
                out.examined += 1;
                let target = rr_node(addr, page_bytes, nodes);
                if node == target {
                    continue;
                }
                move_addrs.push(addr);
                targets.push(target);
                match runs.last_mut() {
                    Some(r)
                        if r.node == node
                            && r.page_bytes == page_bytes
                            && r.start + r.pages * r.page_bytes == addr =>
                    {
                        r.pages += 1
                    }
                    _ => runs.push(PageRun {
                        start: addr,
                        pages: 1,
                        page_bytes,
                        node,
                    }),
                }
            }
            if move_addrs.is_empty() {
                continue;
            }
            journal(&runs).map_err(|e| PagesError::Journal(e.into()))?;
            self.originals.extend(runs);
            let mut moved = vec![0; move_addrs.len()];
            sys::move_pages(pid, &move_addrs, Some(&targets), &mut moved)
                .map_err(|errno| PagesError::MovePages { pid, errno })?;
            tally(&moved, &targets, &mut out);
        }
        Ok(Some(out))
    }

    /// Ends the pass and the rest: the next [`interleave`](Self::interleave)
    /// starts a pass at once (after a revert, the app is interleaved anew).
    pub fn stop(&mut self) {
        self.pass = None;
        self.ended = None;
    }

    /// Moves every page coloc moved back to where it was (the first recorded
    /// original of a page wins) and forgets them.
    pub fn restore(&mut self, pid: u32) -> Result<PageMoves, PagesError> {
        let out = restore_runs(pid, &self.originals)?;
        self.originals.clear();
        self.stop();
        Ok(out)
    }
}

/// Up to `budget` page addresses (with their page size) of `vmas` from `cursor` on.
fn pages_from(vmas: &[Vma], cursor: u64, budget: usize) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for v in vmas.iter().filter(|v| v.end > cursor) {
        let mut a = v.start.max(cursor.next_multiple_of(v.page_bytes));
        while a < v.end && out.len() < budget {
            out.push((a, v.page_bytes));
            a += v.page_bytes;
        }
        if out.len() >= budget {
            break;
        }
    }
    out
}

/// Moves the pages of `runs` back to their nodes, latest run first so that a
/// page moved twice ends where it was first. Pages gone since are skipped.
pub(crate) fn restore_runs(pid: u32, runs: &[PageRun]) -> Result<PageMoves, PagesError> {
    let mut out = PageMoves {
        action: "restore".into(),
        ..PageMoves::default()
    };
    for r in runs.iter().rev() {
        let addrs: Vec<u64> = (0..r.pages).map(|k| r.start + k * r.page_bytes).collect();
        for chunk in addrs.chunks(BATCH) {
            let targets = vec![r.node; chunk.len()];
            let mut status = vec![0; chunk.len()];
            match sys::move_pages(pid, chunk, Some(&targets), &mut status) {
                Ok(_) => {}
                Err(Errno::ESRCH) => return Ok(out),
                Err(errno) => return Err(PagesError::MovePages { pid, errno }),
            }
            out.examined += chunk.len() as u64;
            tally(&status, &targets, &mut out);
        }
    }
    Ok(out)
}

/// Counts the pages that reached their node and those the kernel could not
/// move (not resident any more is neither).
fn tally(status: &[i32], targets: &[i32], out: &mut PageMoves) {
    for (&s, &t) in status.iter().zip(targets) {
        if s == t {
            out.moved += 1;
        } else if s != -libc::ENOENT && s != -libc::EFAULT {
            out.failed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c8a1a000-55d0c8a1c000 r--p 00000000 fd:01 1234 /usr/bin/cat
55d0c8a2a000-55d0c8a2b000 rw-p 00010000 fd:01 1234 /usr/bin/cat
55d0ca5a8000-55d0ca5c9000 rw-p 00000000 00:00 0 [heap]
7f2a00000000-7f2a00400000 rw-p 00000000 00:00 0
7f2b00000000-7f2b00021000 rw-s 00000000 00:01 77 /dev/shm/x
7ffd1c39a000-7ffd1c3bb000 rw-p 00000000 00:00 0 [stack]
";
    const NUMA_MAPS: &str = "\
55d0c8a1a000 default file=/usr/bin/cat mapped=2 N0=2 kernelpagesize_kB=4
55d0c8a2a000 default file=/usr/bin/cat anon=1 dirty=1 N0=1 kernelpagesize_kB=4
55d0ca5a8000 default heap anon=33 dirty=33 N0=30 N1=3 kernelpagesize_kB=4
7f2a00000000 interleave:0-1 anon=2 dirty=2 N0=1 N1=1 kernelpagesize_kB=2048
7f2b00000000 default file=/dev/shm/x mapped=33 N0=33 kernelpagesize_kB=4
7ffd1c39a000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
";

    #[test]
    fn movable_mappings_are_private_writable_with_anonymous_pages() {
        let v = movable_vmas(MAPS, NUMA_MAPS);
        let got: Vec<(u64, u64, u64, &str)> = v
            .iter()
            .map(|v| (v.start, v.end, v.page_bytes, v.policy.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0x55d0c8a2a000, 0x55d0c8a2b000, 4096, "default"),
                (0x55d0ca5a8000, 0x55d0ca5c9000, 4096, "default"),
                (0x7f2a00000000, 0x7f2a00400000, 2 << 20, "interleave:0-1"),
                (0x7ffd1c39a000, 0x7ffd1c3bb000, 4096, "default"),
            ]
        );
        assert_eq!(v[1].per_node, BTreeMap::from([(0, 30), (1, 3)]));
    }

    #[test]
    fn round_robin_depends_on_the_address_only() {
        // Page numbers 0x10, 0x11, 0x12, 0x13 over nodes [0, 2]: 0, 2, 0, 2.
        let got: Vec<i32> = (0x10..0x14)
            .map(|p| rr_node(p * 4096, 4096, &[0, 2]))
            .collect();
        assert_eq!(got, vec![0, 2, 0, 2]);
    }

    #[test]
    fn a_walk_resumes_at_its_cursor_within_its_budget() {
        let vmas = movable_vmas(MAPS, NUMA_MAPS);
        // The .data page, then the heap's 33 pages: 34 with a budget of 34.
        let first = pages_from(&vmas, 0, 34);
        assert_eq!(first.len(), 34);
        assert_eq!(first[0], (0x55d0c8a2a000, 4096));
        let cursor = first.last().unwrap().0 + 4096;
        // Next: the two 2 MiB pages, then the stack's 33.
        let next = pages_from(&vmas, cursor, 100);
        assert_eq!(next[0], (0x7f2a00000000, 2 << 20));
        assert_eq!(next[1], (0x7f2a00200000, 2 << 20));
        assert_eq!(next.len(), 2 + 0x21);
    }

    /// The fixture's mappings as this process's `maps` and `numa_maps` under a
    /// proc root of its own. None of their addresses is mapped here, so
    /// `move_pages` reports every page absent and nothing moves: what is
    /// checked is when the files are read and when a walk happens.
    fn fixture_root() -> (tempfile::TempDir, ProcRoot, u32) {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let d = dir.path().join(pid.to_string());
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("maps"), MAPS).unwrap();
        std::fs::write(d.join("numa_maps"), NUMA_MAPS).unwrap();
        let root = ProcRoot::new(dir.path());
        (dir, root, pid)
    }

    /// The defect: every apply re-read `numa_maps` and walked on, wrapping
    /// around without end. Now a pass reads the files once, walks the 69
    /// pages of the fixture (1 + 33 + 2 + 33) 34 a time over three applies,
    /// rests 5 s, and only then reads them again; other nodes, or a stop (a
    /// revert), start a pass at once.
    #[test]
    fn a_pass_reads_numa_maps_once_then_rests() {
        let (dir, root, pid) = fixture_root();
        let numa_maps = dir.path().join(pid.to_string()).join("numa_maps");
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut m = PageMover::default();
        let walk = |m: &mut PageMover, nodes: &[u32], ms| {
            m.interleave(&root, pid, nodes, 34, at(ms), |_| {
                Ok::<_, std::io::Error>(())
            })
        };
        // Pass 1 reads the files at 0 ms; removed, they are not read again
        // until the pass is over: 34 + 34 pages, then the last 1 (< 34) ends
        // the pass at 200 ms.
        assert!(walk(&mut m, &[0], 0).unwrap().is_some());
        std::fs::remove_file(&numa_maps).unwrap();
        assert!(walk(&mut m, &[0], 100).unwrap().is_some());
        assert!(walk(&mut m, &[0], 200).unwrap().is_some());
        // Rest: 200 ms + 5 s = 5.2 s; nothing at 300 ms or 5.1 s.
        assert_eq!(walk(&mut m, &[0], 300).unwrap(), None);
        assert_eq!(walk(&mut m, &[0], 5100).unwrap(), None);
        // At 5.2 s pass 2 reads numa_maps again (gone: the read fails).
        let e = walk(&mut m, &[0], 5200).unwrap_err();
        assert!(e.to_string().contains("numa_maps"), "{e}");
        std::fs::write(&numa_maps, NUMA_MAPS).unwrap();
        for ms in [5300, 5400, 5500] {
            assert!(walk(&mut m, &[0], ms).unwrap().is_some());
        }
        // Resting after pass 2 (ended at 5.5 s): other nodes start at once,
        assert_eq!(walk(&mut m, &[0], 5600).unwrap(), None);
        let other = walk(&mut m, &[0, 1], 5700).unwrap().unwrap();
        assert_eq!(other.nodes, vec![0, 1]);
        // and after a stop the same nodes do too.
        for ms in [5800, 5900] {
            assert!(walk(&mut m, &[0, 1], ms).unwrap().is_some());
        }
        assert_eq!(walk(&mut m, &[0, 1], 6000).unwrap(), None);
        m.stop();
        assert!(walk(&mut m, &[0, 1], 6100).unwrap().is_some());
    }

    #[test]
    fn own_pages_are_examined_and_stay_on_a_one_node_machine() {
        // This process's own pages, interleaved over node 0: every resident
        // page is examined, none needs to move.
        let nodes = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
        if nodes.trim() != "0" {
            eprintln!("skipped: needs a machine with one NUMA node (online: {nodes:?})");
            return;
        }
        let data = vec![7u8; 1 << 20];
        let pid = std::process::id();
        let mut m = PageMover::default();
        let out = m
            .interleave(
                &ProcRoot::new(std::path::Path::new("/proc")),
                pid,
                &[0],
                PAGES_PER_APPLY,
                Instant::now(),
                |_| Ok::<_, std::io::Error>(()),
            )
            .unwrap()
            .unwrap();
        assert!(out.examined > 0, "{out:?}");
        assert_eq!((out.moved, out.failed), (0, 0), "{out:?}");
        assert!(!m.has_moved());
        assert_eq!(data[12345], 7);
    }
}
