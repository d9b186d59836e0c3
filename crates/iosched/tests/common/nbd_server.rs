//! An `iosched serve` process for the serve tests: started on a free port, its
//! port read from the first line it prints, killed when the handle drops.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running server; killed and reaped on drop.
pub struct Server {
    /// The process (tests signal it).
    pub child: Child,
    /// The TCP port it listens on (127.0.0.1).
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `iosched serve ARGS` that ends by itself after `timeout_s` seconds.
pub fn serve_for(timeout_s: u32, args: &[&str]) -> Server {
    let timeout = timeout_s.to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args([
            "serve",
            "--port",
            "0",
            "--status",
            "0",
            "--timeout",
            &timeout,
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iosched serve");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("piped stderr"))
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("nbd://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Server { child, port }
}
