//! Where the commands' output goes: files written whole or not at all (through
//! [`sim::output`]) and standard output, whose write errors (a closed descriptor, a
//! full disk) are errors like any other rather than a panic in `println!`.

use anyhow::{Context, Result};
use std::io::Write;

/// Write `bytes` to `path`: a regular file whole or not at all, a special file or a
/// symbolic link written through (see [`sim::output`]).
pub fn write_file(path: &str, bytes: &[u8]) -> Result<()> {
    sim::output::write_file(std::path::Path::new(path), bytes)
        .with_context(|| format!("writing {path}"))
}

/// Write `text` to standard output and flush it.
pub fn print(text: &str) -> Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(anyhow::Error::new)
}

/// Was standard output closed when the program started (`iosched ... >&-`)? Rust's
/// start-up code puts `/dev/null`, opened read-write, on a closed standard
/// descriptor, so that later files cannot take its number; a shell redirection to
/// `/dev/null` opens it write-only. Writing a report there would discard it
/// silently, so it is an error, as it is for other Unix tools (`EBADF`).
fn stdout_was_closed() -> bool {
    static CLOSED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CLOSED.get_or_init(|| {
        use std::os::unix::fs::FileTypeExt;
        // SAFETY: fcntl(F_GETFL) on a descriptor number only reads its flags.
        let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL) };
        if flags < 0 || flags & libc::O_ACCMODE != libc::O_RDWR {
            return false;
        }
        let (Ok(fd), Ok(null)) = (
            std::fs::metadata("/proc/self/fd/1"),
            std::fs::metadata("/dev/null"),
        ) else {
            return false;
        };
        use std::os::unix::fs::MetadataExt;
        fd.file_type().is_char_device() && fd.rdev() == null.rdev()
    })
}

/// Standard output for commands that print as they go: its write errors say what
/// was being written.
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

/// See [`stdout`].
pub struct Stdout(std::io::StdoutLock<'static>);

fn named(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("writing standard output: {e}"))
}

impl Write for Stdout {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if stdout_was_closed() {
            return Err(named(std::io::Error::from_raw_os_error(libc::EBADF)));
        }
        self.0.write(b).map_err(named)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(named)
    }
}
