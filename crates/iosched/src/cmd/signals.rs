//! SIGINT and SIGTERM. A simulation (`run`, `fio`) stops at the next check and its
//! report covers what was simulated so far, marked interrupted, as fio's does on
//! Ctrl-C; the command then exits with 128 + the signal's number. Any other command,
//! or a second signal, ends the process at once — after removing the temporaries of
//! output files not yet in place, so that nothing is left behind.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set while the command can stop early and still report.
static GRACEFUL: AtomicBool = AtomicBool::new(false);
/// The first signal received, 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The error a command returns after printing an interrupted report.
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.0 {
            signal_hook::consts::SIGINT => "SIGINT",
            signal_hook::consts::SIGTERM => "SIGTERM",
            _ => "a signal",
        };
        write!(
            f,
            "interrupted by {name}: the report covers the run until then"
        )
    }
}

impl std::error::Error for Interrupted {}

/// Start the thread that handles SIGINT and SIGTERM.
pub fn install() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let first = RECEIVED
                .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            if first && GRACEFUL.load(Ordering::SeqCst) {
                sim::runner::request_stop();
                continue;
            }
            sim::output::remove_temporaries();
            // 128 + the signal, as a shell reports a process a signal ended.
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}

/// From now on a signal asks the simulation to stop instead of ending the process.
pub fn stop_gracefully() {
    GRACEFUL.store(true, Ordering::SeqCst);
}

/// `Err(Interrupted)` if a signal stopped the simulation.
pub fn check() -> Result<(), Interrupted> {
    if sim::runner::stop_requested() {
        return Err(Interrupted(RECEIVED.load(Ordering::SeqCst)));
    }
    Ok(())
}
