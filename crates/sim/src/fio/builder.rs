//! Bookkeeping shared by the job-file and command-line front ends.

use super::options::{JobState, OptDef};
use super::{FioInput, JobSpec, OutputOptions};

/// Accumulates global state, jobs and the ignored-option list while a front
/// end walks its input.
#[derive(Default)]
pub(crate) struct Builder {
    /// The global option state that new jobs start from (fio's `def_thread`).
    pub global: JobState,
    pub global_opts: Vec<(String, String)>,
    pub jobs: Vec<JobSpec>,
    pub ignored: Vec<String>,
    pub warnings: Vec<String>,
}

impl Builder {
    pub(crate) fn note_ignored(&mut self, name: &str) {
        if !self.ignored.iter().any(|n| n == name) {
            self.ignored.push(name.to_string());
        }
    }

    /// Applies one option to `state` and records it in `opts` under its
    /// canonical name (bare flags recorded with an empty value).
    pub(crate) fn apply(
        &mut self,
        state: &mut JobState,
        opts: &mut Vec<(String, String)>,
        def: &OptDef,
        value: Option<&str>,
    ) -> Result<(), String> {
        let applied = state.apply(def, value)?;
        if applied.ignored {
            self.note_ignored(def.name);
        }
        opts.push((def.name.to_string(), value.unwrap_or("").trim().to_string()));
        Ok(())
    }

    /// Applies one option to the global section.
    pub(crate) fn apply_global(&mut self, def: &OptDef, value: Option<&str>) -> Result<(), String> {
        let mut state = std::mem::take(&mut self.global);
        let mut opts = std::mem::take(&mut self.global_opts);
        let r = self.apply(&mut state, &mut opts, def, value);
        self.global = state;
        self.global_opts = opts;
        r
    }

    pub(crate) fn finish(self, output: OutputOptions) -> FioInput {
        FioInput {
            global: self.global_opts,
            jobs: self.jobs,
            ignored: self.ignored,
            output,
            warnings: self.warnings,
        }
    }
}
