//! The socket option every service command takes, and asking the daemon
//! one thing; where the socket is and the protocol's connection are the
//! daemon crate's client side (`coloc_daemon::client`).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use coloc_daemon::client::{client_socket, daemon_socket, Conn, SOCKET_NAME};
use coloc_daemon::protocol::{Reply, Request};

use crate::host::journal_dir;

/// The socket option every service command takes.
#[derive(Debug, Clone, Args)]
pub struct SocketArgs {
    /// The daemon's control socket [default: $COLOC_SOCKET, else
    /// /run/coloc-daemon/coloc.sock for root, else coloc.sock in the user's
    /// journal directory].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl SocketArgs {
    /// The socket path a client uses (`coloc_daemon::client::client_socket`;
    /// a user's own daemon's is in the user's journal directory).
    pub fn client_path(&self) -> Result<PathBuf> {
        match client_socket(self.socket.as_deref()) {
            Some(p) => Ok(p),
            None => Ok(journal_dir()?.join(SOCKET_NAME)),
        }
    }

    /// The socket path the daemon listens on, its directory made safe
    /// (`coloc_daemon::client::daemon_socket`; a user's is in the user's
    /// journal directory, 0700).
    pub fn daemon_path(&self) -> Result<PathBuf> {
        match daemon_socket(self.socket.as_deref())? {
            Some(p) => Ok(p),
            None => Ok(journal_dir()?.join(SOCKET_NAME)),
        }
    }

    /// A connection to the daemon.
    pub fn connect(&self) -> Result<Conn> {
        Ok(Conn::open(self.client_path()?)?)
    }
}

/// Sends one request and returns its reply; a refusal is an error.
pub fn ask(socket: &SocketArgs, request: Request) -> Result<Reply> {
    match socket.connect()?.ask(request)? {
        Reply::Error { message } => bail!(
            "the daemon refused: {}",
            super::printable::printable(&message, super::printable::TEXT_WIDTH)
        ),
        r => Ok(r),
    }
}
