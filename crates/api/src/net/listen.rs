//! Binding a listener with an explicit listen backlog, so a burst of
//! connects queues in the kernel instead of being dropped at the default
//! of 128.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// The listen backlog both APIs use unless configured otherwise.
pub const BACKLOG_DEFAULT: u32 = 1024;

/// Binds `addr` (address reuse on, as Riak's listeners) and listens with a
/// queue of `backlog` pending connections.
pub fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog.max(1))
}
