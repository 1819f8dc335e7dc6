//! Reading a connection-setup message (MPA Request, Reply, RTR) from a
//! socket: peek, feed the setup engine, consume what it took.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;

/// What feeding a setup with peeked bytes did.
pub(super) enum SetupRead<E> {
    Nothing,
    Progress,
    Event(E),
    Failed,
}

/// Peeks at the socket, feeds `feed`, consumes what it took.
pub(super) fn peek_feed<E, Er>(
    stream: &TcpStream,
    mut feed: impl FnMut(&[u8]) -> Result<crate::transport::iwarp::setup::Progress<E>, Er>,
) -> SetupRead<E> {
    let mut buf = [0u8; 1024];
    let n = match stream.peek(&mut buf) {
        Ok(0) => return SetupRead::Failed,
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return SetupRead::Nothing,
        Err(_) => return SetupRead::Failed,
    };
    let Ok(p) = feed(&buf[..n]) else {
        return SetupRead::Failed;
    };
    let mut left = p.consumed;
    while left > 0 {
        match (&*stream).read(&mut buf[..left]) {
            Ok(0) => return SetupRead::Failed,
            Ok(k) => left -= k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return SetupRead::Failed,
        }
    }
    match p.event {
        Some(e) => SetupRead::Event(e),
        None if p.consumed > 0 => SetupRead::Progress,
        None => SetupRead::Nothing,
    }
}
