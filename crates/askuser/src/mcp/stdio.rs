//! stdin and stdout read and written by the runtime's own thread, with no thread between.
//!
//! Tokio's `stdin()` and `stdout()` do each read and write on a blocking thread, which
//! then wakes the runtime: two more threads that must get a core for every message, which
//! costs little on an idle machine and milliseconds on a busy one (issue 51). Where the OS
//! allows, the runtime polls them itself instead:
//! - a pipe (what most hosts give): opened again through `/proc/self/fd` (Linux), which
//!   makes a description of this process's own, set non-blocking; the host's, and any
//!   other process's sharing the original, stay as they were;
//! - a socket (Node.js hosts give a socket pair): set non-blocking.
//!
//! Anything else (a terminal, a file, no `/proc`) gets tokio's.

use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

pub type Input = Pin<Box<dyn AsyncRead + Send>>;
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// stdin, polled by the runtime where it can be.
pub fn input() -> Input {
    #[cfg(target_os = "linux")]
    if let Some(input) = linux::input() {
        return input;
    }
    Box::pin(tokio::io::stdin())
}

/// stdout, polled by the runtime where it can be.
pub fn output() -> Output {
    #[cfg(target_os = "linux")]
    if let Some(output) = linux::output() {
        return output;
    }
    Box::pin(tokio::io::stdout())
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use rustix::fs::{FileType, Mode, OFlags};
    use std::os::fd::{BorrowedFd, OwnedFd};
    use tokio::net::unix::pipe;
    use tokio::net::UnixStream;

    pub fn input() -> Option<Input> {
        Some(match own(rustix::stdio::stdin(), 0, OFlags::RDONLY)? {
            Own::Pipe(fd) => Box::pin(pipe::Receiver::from_owned_fd(fd).ok()?),
            Own::Socket(socket) => Box::pin(socket),
        })
    }

    pub fn output() -> Option<Output> {
        Some(match own(rustix::stdio::stdout(), 1, OFlags::WRONLY)? {
            Own::Pipe(fd) => Box::pin(pipe::Sender::from_owned_fd(fd).ok()?),
            Own::Socket(socket) => Box::pin(socket),
        })
    }

    /// This process's own non-blocking handle on its stdio descriptor `n`.
    enum Own {
        Pipe(OwnedFd),
        Socket(UnixStream),
    }

    /// For stdio descriptor `fd` (number `n`): a pipe opened again through
    /// `/proc/self/fd/N` for `access`, or a socket set non-blocking; none for anything else.
    fn own(fd: BorrowedFd<'_>, n: u8, access: OFlags) -> Option<Own> {
        match FileType::from_raw_mode(rustix::fs::fstat(fd).ok()?.st_mode) {
            FileType::Fifo => {
                let path = format!("/proc/self/fd/{n}");
                Some(Own::Pipe(rustix::fs::open(path.as_str(), access | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty()).ok()?))
            }
            FileType::Socket => Some(Own::Socket(socket(fd)?)),
            _ => None,
        }
    }

    /// The socket of `fd`, non-blocking: that flag is on the socket's description, which
    /// only a process that handed this one its stdio (a launcher) shares; the host's end is
    /// another socket, untouched.
    fn socket(fd: BorrowedFd<'_>) -> Option<UnixStream> {
        let own = std::os::unix::net::UnixStream::from(fd.try_clone_to_owned().ok()?);
        own.set_nonblocking(true).ok()?;
        UnixStream::from_std(own).ok()
    }
}
