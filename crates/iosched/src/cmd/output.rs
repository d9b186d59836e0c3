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
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing standard output")
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
        self.0.write(b).map_err(named)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(named)
    }
}
