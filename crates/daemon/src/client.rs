//! The client side of the control socket (docs/service.md): where a command
//! finds the daemon's socket, root's daemon directory made safe, and one
//! connection's requests and replies in the protocol's framing (one JSON
//! line each, [`crate::protocol`]). The CLI's service commands call this and
//! render the replies.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::protocol::{Envelope, Reply, Request, PROTOCOL_VERSION};

/// Root's daemon directory: reachable by every user (the daemon checks each
/// caller's credentials), writable by root alone; it holds root's socket.
pub const ROOT_DAEMON_DIR: &str = "/run/coloc-daemon";

/// The socket's file name, in root's daemon directory or a user's journal
/// directory.
pub const SOCKET_NAME: &str = "coloc.sock";

/// The variable that names the socket instead of the defaults.
pub const SOCKET_ENV: &str = "COLOC_SOCKET";

/// Why a client could not reach the daemon, or root's directory is unsafe.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("creating {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", path.display())]
    Inspect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is not a directory of root's (a symlink or another user's is refused)",
        path.display()
    )]
    NotRoots { path: PathBuf },
    #[error("no coloc daemon at {} (start one with `coloc daemon`)", path.display())]
    NoDaemon {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing to {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading from {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the daemon at {} closed the connection", path.display())]
    Closed { path: PathBuf },
    #[error("the daemon's reply {line:?}")]
    Reply {
        line: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("encoding a request")]
    Request(#[source] serde_json::Error),
}

/// Root's daemon's socket in [`ROOT_DAEMON_DIR`].
pub fn root_socket() -> PathBuf {
    Path::new(ROOT_DAEMON_DIR).join(SOCKET_NAME)
}

/// Root's daemon directory, made if missing: a directory of root's (not a
/// symlink) that every user can read and only root can write, 0755. It
/// holds root's socket and the OpenMP shim root's daemon preloads into
/// other users' programs.
pub fn root_dir() -> Result<PathBuf, ClientError> {
    safe_root_dir(Path::new(ROOT_DAEMON_DIR))
}

/// [`root_dir`] at `dir`.
fn safe_root_dir(dir: &Path) -> Result<PathBuf, ClientError> {
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(ClientError::CreateDir {
                path: dir.to_path_buf(),
                source: e,
            })
        }
        _ => {}
    }
    let inspect = |source| ClientError::Inspect {
        path: dir.to_path_buf(),
        source,
    };
    let meta = std::fs::symlink_metadata(dir).map_err(inspect)?;
    if !meta.is_dir() || meta.uid() != 0 {
        return Err(ClientError::NotRoots {
            path: dir.to_path_buf(),
        });
    }
    if meta.mode() & 0o777 != 0o755 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(inspect)?;
    }
    Ok(dir.to_path_buf())
}

/// The socket named: `given` (a command's `--socket`), else
/// `$COLOC_SOCKET` when set and not empty.
pub fn named_socket(given: Option<&Path>) -> Option<PathBuf> {
    given.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(SOCKET_ENV)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    })
}

/// Where a client finds the daemon: the socket named ([`named_socket`]),
/// else root's when the caller is root or it exists (users talk to the
/// node's daemon); None: the user's own daemon's, [`SOCKET_NAME`] in the
/// user's journal directory.
pub fn client_socket(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = named_socket(given) {
        return Some(p);
    }
    let root = root_socket();
    (nix::unistd::geteuid().is_root() || root.exists()).then_some(root)
}

/// Where the daemon listens, its directory made safe: the socket named
/// ([`named_socket`]), else root's in [`root_dir`] for root; None: a user's,
/// [`SOCKET_NAME`] in the user's journal directory (0700).
pub fn daemon_socket(given: Option<&Path>) -> Result<Option<PathBuf>, ClientError> {
    if let Some(p) = named_socket(given) {
        return Ok(Some(p));
    }
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    Ok(Some(root_dir()?.join(SOCKET_NAME)))
}

/// A connection to the daemon.
#[derive(Debug)]
pub struct Conn {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    path: PathBuf,
}

impl Conn {
    /// Connects to the socket at `path`; the error says there is no daemon
    /// and how to start one.
    pub fn open(path: PathBuf) -> Result<Conn, ClientError> {
        let no_daemon = |source| ClientError::NoDaemon {
            path: path.clone(),
            source,
        };
        let stream = UnixStream::connect(&path).map_err(no_daemon)?;
        let reader = BufReader::new(stream.try_clone().map_err(no_daemon)?);
        Ok(Conn {
            stream,
            reader,
            path,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection's socket, to wake a blocked [`Conn::receive`] from
    /// another thread (`shutdown(Read)`).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends one request.
    pub fn send(&mut self, request: Request) -> Result<(), ClientError> {
        let mut line = serde_json::to_string(&Envelope {
            v: PROTOCOL_VERSION,
            request,
        })
        .map_err(ClientError::Request)?;
        line.push('\n');
        self.stream
            .write_all(line.as_bytes())
            .map_err(|source| ClientError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// The next reply; an error when the daemon closed the connection.
    pub fn receive(&mut self) -> Result<Reply, ClientError> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .map_err(|source| ClientError::Read {
                path: self.path.clone(),
                source,
            })?;
        if n == 0 {
            return Err(ClientError::Closed {
                path: self.path.clone(),
            });
        }
        serde_json::from_str(&line).map_err(|source| ClientError::Reply { line, source })
    }

    /// Sends one request and returns its reply (a refusal among them:
    /// [`Reply::Error`]).
    pub fn ask(&mut self, request: Request) -> Result<Reply, ClientError> {
        self.send(request)?;
        self.receive()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    /// A request goes out as one line of the protocol's envelope and the
    /// reply line comes back as data; a daemon that hangs up is an error
    /// naming the socket, and no daemon at all says how to start one.
    #[test]
    fn a_request_is_one_line_and_its_reply_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sock");
        let e = Conn::open(path.clone()).unwrap_err().to_string();
        assert!(e.starts_with("no coloc daemon at "), "{e}");
        assert!(e.ends_with("(start one with `coloc daemon`)"), "{e}");
        let listener = UnixListener::bind(&path).unwrap();
        let daemon = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(stream.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            let reply = serde_json::to_string(&Reply::Error {
                message: "no".into(),
            })
            .unwrap();
            (&stream)
                .write_all(format!("{reply}\n").as_bytes())
                .unwrap();
            line
        });
        let mut conn = Conn::open(path.clone()).unwrap();
        let reply = conn.ask(Request::Status).unwrap();
        assert!(
            matches!(&reply, Reply::Error { message } if message == "no"),
            "{reply:?}"
        );
        let sent: Envelope = serde_json::from_str(&daemon.join().unwrap()).unwrap();
        assert_eq!(sent.v, PROTOCOL_VERSION);
        assert!(matches!(sent.request, Request::Status), "{sent:?}");
        let e = conn.receive().unwrap_err().to_string();
        assert_eq!(
            e,
            format!("the daemon at {} closed the connection", path.display())
        );
    }

    /// Root's directory is refused when it is another user's or a symlink,
    /// and its mode is set to 0755 when it is root's.
    #[test]
    fn roots_directory_is_roots_and_0755() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("daemon");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(
            matches!(safe_root_dir(&link), Err(ClientError::NotRoots { .. })),
            "a symlink is refused"
        );
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped the rest: needs root to own a directory as root");
            return;
        }
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        assert_eq!(safe_root_dir(&d).unwrap(), d);
        let mode = std::fs::metadata(&d).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o755);
        std::os::unix::fs::chown(&d, Some(1), None).unwrap();
        let e = safe_root_dir(&d).unwrap_err().to_string();
        assert!(e.contains("is not a directory of root's"), "{e}");
    }
}
