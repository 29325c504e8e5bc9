//! Where the daemon's socket is and how a command asks it something.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use coloc_daemon::protocol::{Envelope, Reply, Request, PROTOCOL_VERSION};

use crate::host::{journal_dir, root_socket, ROOT_DAEMON_DIR};

/// The socket option every service command takes.
#[derive(Debug, Clone, Args)]
pub struct SocketArgs {
    /// The daemon's control socket [default: $COLOC_SOCKET, else
    /// /run/coloc-daemon/coloc.sock for root, else coloc.sock in the user's
    /// journal directory].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// Root's daemon directory, made if missing: a directory of root's (not a
/// symlink) that every user can read and only root can write, 0755. It
/// holds root's socket and the OpenMP shim root's daemon preloads into
/// other users' programs.
pub fn root_dir() -> Result<PathBuf> {
    let dir = Path::new(ROOT_DAEMON_DIR);
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("creating {}", dir.display()))
        }
        _ => {}
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != 0 {
        bail!(
            "{} is not a directory of root's (a symlink or another user's is refused)",
            dir.display()
        );
    }
    if meta.mode() & 0o777 != 0o755 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(dir.to_path_buf())
}

impl SocketArgs {
    /// The socket path a client uses: the option, `$COLOC_SOCKET`, root's when
    /// it exists (users talk to the node's daemon), else the user's own.
    pub fn client_path(&self) -> Result<PathBuf> {
        if let Some(p) = self.explicit() {
            return Ok(p);
        }
        let root = root_socket();
        if nix::unistd::geteuid().is_root() || root.exists() {
            return Ok(root);
        }
        Ok(journal_dir()?.join("coloc.sock"))
    }

    /// The socket path the daemon listens on, its directory made safe: root's
    /// is root's and writable by no one else ([`root_dir`]); a user's is the
    /// user's journal directory (0700).
    pub fn daemon_path(&self) -> Result<PathBuf> {
        if let Some(p) = self.explicit() {
            return Ok(p);
        }
        if !nix::unistd::geteuid().is_root() {
            return Ok(journal_dir()?.join("coloc.sock"));
        }
        Ok(root_dir()?.join("coloc.sock"))
    }

    fn explicit(&self) -> Option<PathBuf> {
        self.socket.clone().or_else(|| {
            std::env::var_os("COLOC_SOCKET")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
    }
}

/// A connection to the daemon.
#[derive(Debug)]
pub struct Conn {
    pub stream: UnixStream,
    reader: BufReader<UnixStream>,
    pub path: PathBuf,
}

impl Conn {
    /// Connects; the error says there is no daemon and how to start one.
    pub fn open(socket: &SocketArgs) -> Result<Conn> {
        let path = socket.client_path()?;
        let stream = UnixStream::connect(&path).with_context(|| {
            format!(
                "no coloc daemon at {} (start one with `coloc daemon`)",
                path.display()
            )
        })?;
        let reader = BufReader::new(stream.try_clone()?);
        Ok(Conn {
            stream,
            reader,
            path,
        })
    }

    pub fn send(&mut self, request: Request) -> Result<()> {
        let mut line = serde_json::to_string(&Envelope {
            v: PROTOCOL_VERSION,
            request,
        })?;
        line.push('\n');
        self.stream
            .write_all(line.as_bytes())
            .with_context(|| format!("writing to {}", self.path.display()))
    }

    /// The next reply; an error when the daemon closed the connection.
    pub fn receive(&mut self) -> Result<Reply> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .with_context(|| format!("reading from {}", self.path.display()))?;
        if n == 0 {
            bail!(
                "the daemon at {} closed the connection",
                self.path.display()
            );
        }
        serde_json::from_str(&line).with_context(|| format!("the daemon's reply {line:?}"))
    }
}

/// Sends one request and returns its reply; a refusal is an error.
pub fn ask(socket: &SocketArgs, request: Request) -> Result<Reply> {
    let mut conn = Conn::open(socket)?;
    conn.send(request)?;
    match conn.receive()? {
        Reply::Error { message } => bail!(
            "the daemon refused: {}",
            super::printable::printable(&message, super::printable::TEXT_WIDTH)
        ),
        r => Ok(r),
    }
}
