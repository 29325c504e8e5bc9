//! One manager per machine (docs/safety.md, One manager per machine): two
//! managers that do not know of each other would each plan every CPU for
//! their own apps.
//!
//! Two marks, both held until the process ends and gone with it:
//! - an exclusive `flock` on `manager.lock` in the journal directory (one
//!   coloc at a time restores that directory's stale journals);
//! - a listening Unix socket in the abstract namespace named
//!   `coloc-manager.<pid>.<64 random bits>`: every user may list those names
//!   (`/proc/net/unix`), none may take a name another will pick, and the
//!   kernel says who listens on one (`SO_PEERCRED` of a connection), whatever
//!   the name claims. A new manager registers first, then looks for the
//!   others, and refuses beside any, naming them.
//!
//! A registrant is counted when its program is coloc's own (`/proc/<pid>/exe`
//! is the file `/proc/self/exe` is), or when that cannot be read (another
//! user's process, seen by a user): a user cannot tell another user's coloc
//! from a fake, root can. So a fake registration never stops root's
//! managers, and may stop another user's, naming its pid and owner.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, UnixAddr};

/// The file whose lock one manager holds per journal directory.
pub const MANAGER_LOCK: &str = "manager.lock";

/// Set by a manager on a `coloc run` it starts and waits for (`bench mixes
/// --fresh`) to its own pid: the run manages the apps in its stead, under
/// the parent's marks (checked against the lock file, the run's parent and
/// the kernel's word on who listens, so it cannot let a second manager in by
/// mistake).
pub const MANAGER_PARENT_ENV: &str = "COLOC_MANAGER_PARENT";

/// Set to `1` by tests and experiments that run several managers at once on
/// purpose (each with its own `$COLOC_JOURNAL_DIR`): such a manager neither
/// looks for the others nor registers, so none sees it.
pub const SHARE_MACHINE_ENV: &str = "COLOC_SHARE_MACHINE";

/// The start of every manager's abstract socket name (after the kernel's
/// leading NUL, shown as `@` in `/proc/net/unix`).
const NAME_PREFIX: &str = "coloc-manager.";

/// Takes this process's marks of the one manager (the lock of journal
/// directory `dir`, and the machine's registration unless
/// [`SHARE_MACHINE_ENV`] says otherwise), or refuses, naming the manager
/// already there. Once per process: later calls find them taken.
pub fn claim(dir: &Path) -> Result<()> {
    static CLAIMED: OnceLock<()> = OnceLock::new();
    if CLAIMED.get().is_some() {
        return Ok(());
    }
    lock_directory(dir)?;
    if !sharing()? {
        register()?;
        refuse_beside_others()?;
    }
    let _ = CLAIMED.set(());
    Ok(())
}

/// Whether this manager shares the machine on purpose ([`SHARE_MACHINE_ENV`]
/// is `1`); any other value is refused, naming the variable.
fn sharing() -> Result<bool> {
    match std::env::var_os(SHARE_MACHINE_ENV) {
        None => Ok(false),
        Some(v) if v.is_empty() => Ok(false),
        Some(v) if v == "1" => Ok(true),
        Some(v) => anyhow::bail!(
            "{SHARE_MACHINE_ENV}: expected 1 (share the machine with other managers on \
             purpose) or unset, not {:?}",
            v
        ),
    }
}

/// The journal directory's lock: a second manager of the directory finds it
/// held and refuses, naming the holder written in the file.
fn lock_directory(dir: &Path) -> Result<()> {
    static HELD: OnceLock<nix::fcntl::Flock<std::fs::File>> = OnceLock::new();
    if HELD.get().is_some() {
        return Ok(());
    }
    let path = dir.join(MANAGER_LOCK);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
    {
        Ok(lock) => lock,
        Err((mut file, Errno::EWOULDBLOCK)) => {
            let mut holder = String::new();
            let _ = (&mut file).take(4096).read_to_string(&mut holder);
            if held_by_my_parent(&holder) {
                return Ok(());
            }
            let holder = printable_line(&holder);
            anyhow::bail!(
                "another coloc manages this machine's apps ({}, holding {}): {}",
                if holder.is_empty() {
                    "a process starting"
                } else {
                    &holder
                },
                path.display(),
                ADVICE
            );
        }
        Err((_, e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
    };
    let me: Vec<String> = std::env::args().take(4).collect();
    lock.set_len(0)?;
    let _ = writeln!(&mut *lock, "pid {}: {}", std::process::id(), me.join(" "));
    let _ = HELD.set(lock);
    Ok(())
}

/// What every refusal advises.
const ADVICE: &str = "two managers would plan the same CPUs; wait for it to end, or run your \
                      apps under the daemon with `coloc exec`";

/// The pid in [`MANAGER_PARENT_ENV`] when it is this process's parent's:
/// the manager that started this run to plan in its stead.
fn parent_said() -> Option<u32> {
    let parent = std::os::unix::process::parent_id();
    std::env::var(MANAGER_PARENT_ENV)
        .ok()
        .filter(|p| *p == parent.to_string())
        .map(|_| parent)
}

/// Whether the lock's holder (its file's `pid N:` line) is this process's
/// parent and said so ([`MANAGER_PARENT_ENV`]).
fn held_by_my_parent(holder: &str) -> bool {
    let Some(parent) = parent_said() else {
        return false;
    };
    holder
        .strip_prefix("pid ")
        .and_then(|rest| rest.split(':').next())
        .is_some_and(|pid| pid == parent.to_string())
}

/// `text`'s first line, printable, at most 200 characters.
fn printable_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// Binds and listens on this process's abstract name for the rest of its
/// life; a thread accepts and closes every connection, so the backlog never
/// fills and every prober gets its answer (the kernel's, at connect).
fn register() -> Result<()> {
    static LISTENING: OnceLock<()> = OnceLock::new();
    if LISTENING.get().is_some() {
        return Ok(());
    }
    let mut taken = 0;
    let listener = loop {
        let name = format!("{NAME_PREFIX}{}.{:016x}", std::process::id(), random()?);
        let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
        match UnixListener::bind_addr(&addr) {
            Ok(l) => break l,
            // Someone took the name first; another draw.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && taken < 8 => taken += 1,
            Err(e) => {
                return Err(e)
                    .context("registering as this machine's coloc manager (@coloc-manager.*)")
            }
        }
    };
    std::thread::Builder::new()
        .name("coloc-manager".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if conn.is_err() {
                    // Out of descriptors: the backlog waits.
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
        .context("starting the manager registration's thread")?;
    let _ = LISTENING.set(());
    Ok(())
}

/// 64 random bits from the kernel.
fn random() -> Result<u64> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(u64::from_ne_bytes(bytes))
}

/// Refuses when another manager is registered, naming each; says on stderr
/// which registrants it did not count, and why.
fn refuse_beside_others() -> Result<()> {
    let table = std::fs::read("/proc/net/unix").context("reading /proc/net/unix")?;
    let me = Me {
        pid: std::process::id(),
        parent: parent_said(),
        root: nix::unistd::geteuid().is_root(),
    };
    let mut managers = Vec::new();
    for name in registered_names(&table) {
        let peer = match listener_of(&name) {
            Ok(peer) => peer,
            // Gone since the table was read, or not listening.
            Err(Errno::ECONNREFUSED | Errno::ENOENT) => continue,
            Err(e) => {
                eprintln!("coloc: not counting @{name} as a manager: connecting to it: {e}");
                continue;
            }
        };
        let program = same_program(peer.pid);
        match judge(&me, &peer, program) {
            Counted::Skip => {}
            Counted::Manager => managers.push(describe(&peer, program)),
            Counted::Ignored(why) => eprintln!(
                "coloc: not counting @{name} (pid {}, {}) as a manager: {why}",
                peer.pid,
                user_name(peer.uid)
            ),
        }
    }
    if managers.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "another coloc manages this machine's apps ({}): {ADVICE}; to run several at once \
         on purpose, set {SHARE_MACHINE_ENV}=1 for each",
        managers.join("; ")
    )
}

/// Every manager name in `/proc/net/unix`'s text, without its `@`. Read by
/// hand rather than with `procfs`: abstract names are bytes a user chooses,
/// newlines included, and one line a user made unparsable must not hide the
/// others or fail the table. Only names of the exact form
/// `coloc-manager.<pid>.<16 hex digits>` are kept; each is checked by
/// connecting anyway.
pub fn registered_names(table: &[u8]) -> BTreeSet<String> {
    table
        .split(|&b| b == b'\n' || b == b' ')
        .filter_map(|word| word.strip_prefix(b"@"))
        .filter_map(|name| std::str::from_utf8(name).ok())
        .filter(|name| well_formed(name))
        .map(str::to_string)
        .collect()
}

fn well_formed(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(NAME_PREFIX) else {
        return false;
    };
    let Some((pid, suffix)) = rest.split_once('.') else {
        return false;
    };
    !pid.is_empty()
        && pid.len() <= 10
        && pid.bytes().all(|b| b.is_ascii_digit())
        && suffix.len() == 16
        && suffix.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Who listens on an abstract name, by the kernel's word (`SO_PEERCRED`),
/// connecting without waiting (a backlog a fake never drains answers
/// `EAGAIN`, not a hang).
fn listener_of(name: &str) -> std::result::Result<Peer, Errno> {
    let fd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let addr = UnixAddr::new_abstract(name.as_bytes())?;
    socket::connect(fd.as_raw_fd(), &addr)?;
    let cred = socket::getsockopt(&fd, sockopt::PeerCredentials)?;
    Ok(Peer {
        pid: cred.pid().max(0) as u32,
        uid: cred.uid(),
    })
}

/// This process, as [`judge`] needs it.
#[derive(Debug, Clone, Copy)]
pub struct Me {
    pub pid: u32,
    /// The manager that started this run to plan in its stead
    /// ([`MANAGER_PARENT_ENV`], checked against the real parent).
    pub parent: Option<u32>,
    pub root: bool,
}

/// A registrant, by the kernel's word: pid 0 when it is in a pid namespace
/// this process cannot see into.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub pid: u32,
    pub uid: u32,
}

/// Whether a registrant's program is coloc's own: `None` when it cannot be
/// told (its `/proc/<pid>/exe` is another user's, or pid 0).
fn same_program(pid: u32) -> Option<bool> {
    if pid == 0 {
        return None;
    }
    let mine = std::fs::metadata("/proc/self/exe").ok()?;
    let theirs = std::fs::metadata(format!("/proc/{pid}/exe")).ok()?;
    Some(mine.dev() == theirs.dev() && mine.ino() == theirs.ino())
}

/// What a registrant counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// This process, or the manager it plans for.
    Skip,
    /// Another manager: this one refuses.
    Manager,
    /// Not counted, for the reason given.
    Ignored(&'static str),
}

/// Whether `peer` counts as another manager for `me`, given whether its
/// program is coloc's (`program`, None when it cannot be told). Root can
/// always tell, so whatever root cannot confirm as coloc is ignored; a user
/// cannot tell for another user's process, and counts it.
pub fn judge(me: &Me, peer: &Peer, program: Option<bool>) -> Counted {
    if peer.pid == me.pid || (peer.pid != 0 && Some(peer.pid) == me.parent) {
        return Counted::Skip;
    }
    match (program, me.root) {
        (Some(true), _) => Counted::Manager,
        (Some(false), _) => Counted::Ignored("its program is not this coloc's"),
        (None, true) => Counted::Ignored(
            "it cannot be confirmed as a coloc (gone, or in another pid namespace)",
        ),
        (None, false) if peer.pid == 0 => Counted::Ignored("it is in another pid namespace"),
        (None, false) => Counted::Manager,
    }
}

/// A manager, as a refusal names it: pid, user and command line.
fn describe(peer: &Peer, program: Option<bool>) -> String {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", peer.pid))
        .map(|b| {
            let text = String::from_utf8_lossy(&b).replace('\0', " ");
            printable_line(text.trim_end())
        })
        .unwrap_or_default();
    let unchecked = if program.is_none() {
        ", its program unreadable to you"
    } else {
        ""
    };
    format!(
        "pid {}, {}{unchecked}: {}",
        peer.pid,
        user_name(peer.uid),
        if cmdline.is_empty() { "?" } else { &cmdline }
    )
}

fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("user {}", u.name),
        _ => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real lines of `/proc/net/unix` (the simulator's `kvm-2cpu`), with a
    /// manager's registration, one of its accepted connections, and names a
    /// user made to look like one.
    const TABLE: &[u8] = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
0000000000000000: 00000002 00000000 00010000 0001 01 31620 /run/coloc-daemon/coloc.sock\n\
0000000000000000: 00000002 00000000 00010000 0001 01 48211 @coloc-manager.4242.00ff00ff00ff00ff\n\
0000000000000000: 00000003 00000000 00000000 0001 03 48215 @coloc-manager.4242.00ff00ff00ff00ff\n\
0000000000000000: 00000002 00000000 00010000 0001 01 48300 @coloc-manager.17.00ff00ff00ff00f\n\
0000000000000000: 00000002 00000000 00010000 0001 01 48301 @coloc-manager.x.00ff00ff00ff00ff\n\
0000000000000000: 00000002 00000000 00010000 0001 01 48302 @coloc-manager.9.\xff\n\
0000000000000000: 00000002 00000000 00010000 0001 01 48303 @evil\n@coloc-manager.77.0123456789abcdef\n\
0000000000000000: 00000003 00000000 00000000 0001 03 20001\n";

    #[test]
    fn the_table_yields_each_well_formed_manager_name_once() {
        let names: Vec<String> = registered_names(TABLE).into_iter().collect();
        assert_eq!(
            names,
            [
                "coloc-manager.4242.00ff00ff00ff00ff",
                // A line a user injected with a newline in its name: kept,
                // and then checked by connecting like any other.
                "coloc-manager.77.0123456789abcdef",
            ]
        );
    }

    const ME: Me = Me {
        pid: 100,
        parent: None,
        root: false,
    };

    /// Who counts as another manager: (me, peer pid, its program, counted).
    #[test]
    fn who_counts_as_another_manager() {
        let root = Me { root: true, ..ME };
        let child_of_200 = Me {
            parent: Some(200),
            ..ME
        };
        let cases: &[(Me, u32, Option<bool>, Counted)] = &[
            // Itself.
            (ME, 100, Some(true), Counted::Skip),
            // The manager that started it to plan in its stead.
            (child_of_200, 200, Some(true), Counted::Skip),
            (child_of_200, 201, Some(true), Counted::Manager),
            // A coloc, seen by a user or root.
            (ME, 300, Some(true), Counted::Manager),
            (root, 300, Some(true), Counted::Manager),
            // Another program on a manager's name.
            (
                ME,
                300,
                Some(false),
                Counted::Ignored("its program is not this coloc's"),
            ),
            (
                root,
                300,
                Some(false),
                Counted::Ignored("its program is not this coloc's"),
            ),
            // Another user's process: a user cannot tell, and counts it;
            // root can always tell, so what it cannot is gone.
            (ME, 300, None, Counted::Manager),
            (
                root,
                300,
                None,
                Counted::Ignored(
                    "it cannot be confirmed as a coloc (gone, or in another pid namespace)",
                ),
            ),
            (
                ME,
                0,
                None,
                Counted::Ignored("it is in another pid namespace"),
            ),
        ];
        for (me, pid, program, want) in cases {
            let peer = Peer {
                pid: *pid,
                uid: 1000,
            };
            assert_eq!(
                judge(me, &peer, *program),
                *want,
                "{me:?} {pid} {program:?}"
            );
        }
    }

    proptest::proptest! {
        /// Any bytes in the table (a user chooses abstract names, newlines
        /// and invalid UTF-8 included): no panic, and every name kept is
        /// well formed.
        #[test]
        fn any_table_text_is_read_without_panic(
            noise in proptest::collection::vec(
                proptest::sample::select(b"@coloc-manager.0123456789abcdefx \n\xff".to_vec()),
                0..200,
            )
        ) {
            let mut table = b"@coloc-manager.1.0123456789abcdef\n".to_vec();
            table.extend(noise);
            for name in registered_names(&table) {
                proptest::prop_assert!(well_formed(&name), "{}", name);
            }
        }
    }
}
