//! fio's steady-state check (steadystate.c `steadystate_check`), run by the
//! simulation where fio's helper thread runs it: every check interval from
//! the start of the run, re-phased whenever a job's statistics restart
//! (`helper_reset`, called from `reset_all_stats` at a ramp's end).

use super::{Ev, IoObserver, Simulation};
use crate::steadystate::{GroupSums, SsReport, Window};
use blk::Ns;

/// The detector's state in a run.
#[derive(Debug, Default)]
pub(super) struct SteadyCheck {
    /// The check interval, ns (0: no job detects steady state).
    interval_ns: u64,
    /// Generation of the check scheduled last: a re-phase makes older
    /// pending checks stale.
    generation: u64,
    /// Per clone: the ring it keeps (holders only).
    windows: Vec<Option<Window>>,
}

impl SteadyCheck {
    /// The detector for `jobs`: a ring for each holder.
    pub(super) fn new(jobs: &[crate::job::JobConfig]) -> SteadyCheck {
        let windows: Vec<Option<Window>> = jobs
            .iter()
            .map(|j| {
                j.control
                    .steadystate
                    .filter(|s| s.holder)
                    .map(|s| Window::new(&s.spec))
            })
            .collect();
        let interval_ns = jobs
            .iter()
            .find_map(|j| j.control.steadystate.map(|s| s.spec.interval_ns()))
            .unwrap_or(0);
        SteadyCheck {
            interval_ns,
            generation: 0,
            windows,
        }
    }
}

impl Simulation {
    /// Schedule the first check (the helper thread starts with the run).
    pub(super) fn steady_arm_first(&mut self) {
        if self.steady.interval_ns > 0 {
            self.events
                .push(Ns(self.steady.interval_ns), Ev::SsCheck(0));
        }
    }

    /// fio's `helper_reset`: the next check comes one interval from now.
    pub(super) fn steady_rephase(&mut self, now: Ns) {
        if self.steady.interval_ns == 0 {
            return;
        }
        self.steady.generation += 1;
        self.events.push(
            now.add(self.steady.interval_ns),
            Ev::SsCheck(self.steady.generation),
        );
    }

    /// A clone with steady-state detection has not exited yet: the helper
    /// thread still checks.
    pub(super) fn steady_pending(&self) -> bool {
        self.steady.interval_ns > 0
            && self
                .jobs
                .iter()
                .any(|j| j.cfg.control.steadystate.is_some() && !j.finished)
    }

    /// The check of generation `generation`, due now.
    pub(super) fn steady_check(&mut self, generation: u64, now: Ns, obs: &mut dyn IoObserver) {
        if generation != self.steady.generation {
            return;
        }
        let mut attained = Vec::new();
        let mut sums = GroupSums::default();
        let mut prev_group: Option<u32> = None;
        for j in 0..self.jobs.len() {
            let job = &self.jobs[j];
            let Some(ss) = job.cfg.control.steadystate else {
                continue;
            };
            if !job.started || job.finished || job.ss.attained {
                continue;
            }
            let groupid = job.cfg.control.groupid;
            if !ss.group_reporting || prev_group != Some(groupid) {
                sums = GroupSums::default();
            }
            prev_group = Some(groupid);
            let (epoch, totals) = (job.epoch(), job.ss_totals());
            self.jobs[j]
                .ss
                .check(&ss.spec, now, epoch, totals, &mut sums);
            if (ss.group_reporting && !ss.holder) || sums.counted == 0 {
                continue;
            }
            let Some(w) = self.steady.windows[j].as_mut() else {
                continue;
            };
            if w.push(sums.sample()) {
                attained.push((j, ss.group_reporting, groupid));
            }
        }
        for (j, group, groupid) in attained {
            self.steady_terminate(j, group, groupid, now, obs);
        }
        if self.steady_pending() {
            self.events
                .push(now.add(self.steady.interval_ns), Ev::SsCheck(generation));
        }
    }

    /// fio's `fio_mark_td_terminate` for the clone (with `group_reporting`,
    /// every clone of its reporting group) at steady state.
    fn steady_terminate(
        &mut self,
        j: usize,
        group: bool,
        groupid: u32,
        now: Ns,
        obs: &mut dyn IoObserver,
    ) {
        for k in 0..self.jobs.len() {
            let chosen = if group {
                self.jobs[k].cfg.control.groupid == groupid
            } else {
                k == j
            };
            if chosen {
                self.jobs[k].ss.attained = true;
                self.end_job(k, now, obs);
            }
        }
    }

    /// The report's steady-state section per clone (holders only).
    pub(super) fn steady_reports(&self) -> Vec<Option<SsReport>> {
        self.steady
            .windows
            .iter()
            .zip(&self.jobs)
            .map(|(w, j)| {
                let spec = j.cfg.control.steadystate?.spec;
                w.as_ref().map(|w| w.report(&spec))
            })
            .collect()
    }
}
