//! The README's commands do what its text says.
//!
//! Every fenced `sh` block of README.md is read. Blocks marked with the comment
//! `<!-- readme-test: not run ... -->` take minutes; their `coloc` commands are
//! only checked to parse (`--help` appended: clap refuses an unknown command or
//! option before it prints help). Every other `coloc` command runs, in order, in
//! a scratch directory that holds the repository's `examples/`, with its own
//! HOME so the profile store and solo times are the test's, and must succeed
//! within a time limit. Then the claims the README's text makes are checked
//! against what the commands printed and wrote: the policies table against
//! `coloc policies`, the kernels it names, where a run writes its trace, where
//! the profile store lives, that the ReSense flow characterizes before it
//! compares, and that every docs link resolves.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// A guard against a hung command, not a timing assertion: on an idle 2-CPU
/// machine each quick command takes seconds, on a machine shared with other
/// builds it may take minutes.
const LIMIT: Duration = Duration::from_secs(300);

/// The marker of blocks that are not run.
const NOT_RUN: &str = "<!-- readme-test: not run";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// One fenced code block.
#[derive(Debug)]
struct Block {
    lang: String,
    run: bool,
    lines: Vec<String>,
}

/// The fenced blocks of a Markdown text, each marked run or not by the line
/// before its opening fence.
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut prev = "";
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let body = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .map(str::to_string)
                .collect();
            out.push(Block {
                lang: lang.trim().to_string(),
                run: !prev.trim_start().starts_with(NOT_RUN),
                lines: body,
            });
            prev = "";
            continue;
        }
        if !line.trim().is_empty() {
            prev = line;
        }
    }
    out
}

/// A command line without its trailing comment (` # ...`).
fn command_of(line: &str) -> &str {
    line.split(" # ").next().unwrap_or("").trim()
}

/// The commands of the `sh` blocks, with whether they run.
fn commands(md: &str) -> Vec<(String, bool)> {
    blocks(md)
        .into_iter()
        .filter(|b| b.lang == "sh")
        .flat_map(|b| {
            b.lines
                .iter()
                .map(|l| command_of(l).to_string())
                .filter(|c| !c.is_empty())
                .map(|c| (c, b.run))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What one command did.
struct Ran {
    stdout: String,
    stderr: String,
}

/// The scratch directory the commands run in, with the environment they see.
struct Scratch {
    dir: tempfile::TempDir,
    path_var: String,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(repo().join("examples"), dir.path().join("examples")).unwrap();
        fs::create_dir(dir.path().join("home")).unwrap();
        let bin = Path::new(env!("CARGO_BIN_EXE_coloc")).parent().unwrap();
        let path_var = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Scratch { dir, path_var }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Runs one README line with `sh -c` (so `equal-*/` expands as it would
    /// for a reader), `coloc` being the binary under test.
    fn run(&self, line: &str) -> Ran {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(self.dir.path())
            .env("PATH", &self.path_var)
            .env("HOME", self.home())
            // One coloc manager per machine (docs/safety.md): this scratch
            // directory's own journal, sharing the machine with the other
            // tests' managers on purpose.
            .env("COLOC_JOURNAL_DIR", self.dir.path().join("journal"))
            .env("COLOC_SHARE_MACHINE", "1")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Drain both pipes while waiting, so a chatty command cannot block.
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).ok();
            s
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            err.read_to_string(&mut s).ok();
            s
        });
        let start = Instant::now();
        let status = match child.wait_timeout(LIMIT).unwrap() {
            Some(s) => s,
            None => {
                child.kill().ok();
                child.wait().ok();
                panic!("README command `{line}` took more than {LIMIT:?}");
            }
        };
        let ran = Ran {
            stdout: reader.join().unwrap(),
            stderr: err_reader.join().unwrap(),
        };
        assert!(
            status.success(),
            "README command `{line}` failed ({status}) after {:?}:\n{}\n{}",
            start.elapsed(),
            ran.stderr,
            ran.stdout
        );
        eprintln!("readme: `{line}`: {:.1} s", start.elapsed().as_secs_f64());
        ran
    }
}

/// The rows of the README table whose header starts with `| policy |`: the
/// first column without its backquotes.
fn policies_table(md: &str) -> Vec<String> {
    md.lines()
        .skip_while(|l| !l.starts_with("| policy |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.split('|')
                .nth(1)
                .unwrap()
                .trim()
                .trim_matches('`')
                .to_string()
        })
        .collect()
}

/// The directories matching `parent/prefix*`.
fn dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    fs::read_dir(parent)
        .unwrap_or_else(|e| panic!("{}: {e}", parent.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect()
}

#[test]
fn the_readme_opens_with_the_two_setup_commands() {
    let md = readme();
    let first = blocks(&md).into_iter().next().expect("a code block");
    let cmds: Vec<&str> = first.lines.iter().map(|l| command_of(l)).collect();
    assert_eq!(
        cmds,
        [
            "scripts/setup && cargo run --release -- demo",
            "scripts/setup && cargo test --workspace"
        ],
        "the README's first block"
    );
    // Nothing but the title comes before it.
    let before: Vec<&str> = md
        .lines()
        .take_while(|l| !l.starts_with("```"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(before, ["# coloc"]);
    let setup = repo().join("scripts/setup");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&setup).unwrap().permissions());
    assert!(mode & 0o111 != 0, "scripts/setup is not executable");
    // `cargo run` with no `-p` runs the workspace's default member: this crate.
    let manifest = fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("default-members = [\"crates/cli\"]"));
}

#[test]
fn the_install_command_installs_this_binary() {
    let md = readme();
    let cmds = commands(&md);
    assert!(
        cmds.iter()
            .any(|(c, _)| c == "cargo install --path crates/cli"),
        "the README says how to put coloc on PATH"
    );
    // The path names the package whose binary the tests run.
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).ends_with("crates/cli"));
    assert!(env!("CARGO_BIN_EXE_coloc").ends_with("/coloc"));
}

#[test]
fn readme_links_resolve_inside_the_repository() {
    let md = readme();
    let mut links = 0;
    for (i, _) in md.match_indices("](") {
        let rest = &md[i + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        if target.starts_with("http") {
            continue;
        }
        let file = target.split('#').next().unwrap();
        assert!(
            !file.contains(".."),
            "README links outside the checkout: {target}"
        );
        assert!(
            repo().join(file).exists(),
            "README links to missing {target}"
        );
        links += 1;
    }
    assert!(links >= 10, "only {links} local links");
    assert!(
        !md.contains("shared/"),
        "README mentions a folder outside the checkout"
    );
}

#[test]
fn the_readme_commands_run_and_do_what_its_text_says() {
    let md = readme();
    let scratch = Scratch::new();
    let mut ran: Vec<(String, Ran)> = Vec::new();
    let mut parsed = 0;
    for (cmd, run) in commands(&md) {
        if cmd.starts_with("scripts/setup && cargo ") || cmd == "cargo install --path crates/cli" {
            continue; // the other tests check these
        }
        if let Some(script) = cmd.strip_prefix("scripts/") {
            assert!(!run, "`{cmd}` is in a block the test would run");
            let mode = std::os::unix::fs::PermissionsExt::mode(
                &fs::metadata(repo().join("scripts").join(script))
                    .unwrap_or_else(|e| panic!("{cmd}: {e}"))
                    .permissions(),
            );
            assert!(mode & 0o111 != 0, "{cmd} is not executable");
            continue;
        }
        // `sudo coloc ...` is a coloc command run as root.
        let cmd = cmd.strip_prefix("sudo ").unwrap_or(&cmd).to_string();
        assert!(
            cmd.starts_with("coloc "),
            "README command `{cmd}` is of a kind this test does not know: run it here or mark its block"
        );
        if run {
            let r = scratch.run(&cmd);
            ran.push((cmd, r));
        } else {
            // Parses: clap refuses an unknown subcommand or option before it
            // prints the help that a trailing --help asks for (before `--`:
            // what follows is the command `coloc exec` runs).
            let r = scratch.run(&match cmd.split_once(" -- ") {
                Some((head, tail)) => format!("{head} --help -- {tail}"),
                None => format!("{cmd} --help"),
            });
            assert!(r.stdout.contains("Usage: coloc"), "{cmd}: {}", r.stdout);
            parsed += 1;
        }
    }
    assert!(ran.len() >= 14, "only {} README commands ran", ran.len());
    assert!(
        parsed >= 8,
        "only {parsed} long README commands were checked"
    );
    // The output of the first (or last) command starting with `prefix`.
    let find = |prefix: &str, last: bool| -> &Ran {
        let mut it = ran.iter().filter(|(c, _)| c.starts_with(prefix));
        let hit = if last { it.next_back() } else { it.next() };
        hit.map(|(_, r)| r)
            .unwrap_or_else(|| panic!("the README no longer runs `{prefix}…`"))
    };

    // "`coloc policies` lists them": the README's table, row for row.
    let listed: Vec<String> = find("coloc policies", false)
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert_eq!(
        policies_table(&md),
        listed,
        "the README's policies table vs `coloc policies`"
    );

    // "built-in workload kernels: stream, compute, share, barrier, lock".
    let kernels = &find("coloc kernels", false).stdout;
    for k in ["stream", "compute", "share", "barrier", "lock"] {
        assert!(
            kernels.contains(&format!("kernel:{k} ")),
            "`coloc kernels` does not list {k}:\n{kernels}"
        );
    }

    // "one run under auto, the default; trace in
    // coloc-runs/two-barriers/auto-<time>/trace.jsonl", and "--policy equal"
    // beside it.
    let runs = scratch.dir.path().join("coloc-runs/two-barriers");
    // Two auto runs (the default, then --objective art) and one under equal.
    for (policy, runs_of_it) in [("auto", 2), ("equal", 1)] {
        let found = dirs(&runs, &format!("{policy}-"));
        assert_eq!(found.len(), runs_of_it, "{policy}: {found:?}");
        for dir in found {
            let trace = fs::read_to_string(dir.join("trace.jsonl")).unwrap();
            let header: serde_json::Value =
                serde_json::from_str(trace.lines().next().unwrap()).unwrap();
            assert_eq!(header["policy"], policy);
            assert_eq!(header["machine"], "linux");
        }
    }
    // "every metric again, from the trace alone".
    let report = &find("coloc report coloc-runs/two-barriers/auto-", false).stdout;
    assert!(report.contains("makespan"), "{report}");
    // "each app alone": solo names both apps.
    let solo = &find("coloc solo examples/memory-compute.toml", false).stdout;
    assert!(
        solo.contains("stream") && solo.contains("compute"),
        "{solo}"
    );

    // "one SQLite file at ~/.local/share/coloc/profiles.sqlite".
    let store = scratch.home().join(".local/share/coloc/profiles.sqlite");
    assert!(store.is_file(), "no store at {}", store.display());
    let profiles = &find("coloc profiles list", false).stdout;
    assert!(
        profiles.contains("stream") && profiles.contains("compute"),
        "the memory-compute apps are not listed:\n{profiles}"
    );

    // "the papers' machines, kvm-2cpu (this VM)".
    let platforms = &find("coloc sim --list-platforms", false).stdout;
    for p in [
        "kvm-2cpu",
        "nupoco-amd64",
        "opteron48",
        "harpertown",
        "westmere",
    ] {
        assert!(platforms.contains(p), "--list-platforms lacks {p}");
    }

    // The ReSense flow characterizes the mix on the simulated platform before it
    // compares ("without profiles every score is 0"): every app of mix.toml has a
    // profile measured with cycles.
    let cmds: Vec<String> = commands(&md).into_iter().map(|(c, _)| c).collect();
    let at = |prefix: &str| {
        cmds.iter()
            .position(|c| c.starts_with(prefix))
            .unwrap_or_else(|| panic!("the README's ReSense flow lacks `{prefix}…`"))
    };
    assert!(
        at("coloc profile --sim opteron48 mix.toml") < at("coloc compare --sim opteron48 mix.toml"),
        "the ReSense flow must characterize before it compares"
    );
    let mix = fs::read_to_string(scratch.dir.path().join("mix.toml")).unwrap();
    let mix = coloc_model::workload::parse_workload("mix.toml", &mix).unwrap();
    assert_eq!(mix.apps.len(), 4);
    let profiles = &find("coloc profiles list", true).stdout;
    for app in &mix.apps {
        let model = app.model.as_deref().unwrap();
        let row = profiles
            .lines()
            .find(|l| l.contains(&format!("model {model} ")) && l.contains("cycles"))
            .unwrap_or_else(|| panic!("no profile of {model} after the flow:\n{profiles}"));
        assert!(row.contains("socket"), "{row}");
    }
}
