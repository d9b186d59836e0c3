//! Device models: what sits behind the block layer's driver interface.
//!
//! A device model accepts requests through [`blk::mq::Driver::queue_rq`] (refusing
//! them with a busy status when it cannot take more), serves them in virtual time and
//! reports completions. It is event driven: after every interaction the simulator asks
//! [`Device::next_event`] when the model next needs attention and calls
//! [`Device::advance`] at that time, which pushes the requests finished by then.
//!
//! Models: [`ideal::Ideal`] (fixed latency, a bandwidth pipe, a queue depth). Profiles
//! (named, documented parameter sets) are listed by [`profiles`].

pub mod ideal;

use blk::mq::Driver;
use blk::{Ns, RqId};

/// Static facts the block layer reads from a device (queue limits and flags).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Profile name.
    pub name: String,
    /// Capacity in 512-byte sectors.
    pub capacity_sectors: u64,
    /// Commands the device accepts at once (driver tags).
    pub queue_depth: u32,
    /// `queue/rotational`.
    pub rotational: bool,
    /// The device has a volatile write cache.
    pub write_cache: bool,
    /// The device supports FUA writes natively.
    pub fua: bool,
    /// `max_hw_sectors_kb` × 2.
    pub max_hw_sectors: u32,
    /// `max_segments`.
    pub max_segments: u32,
    /// Hardware queues.
    pub nr_hw_queues: u16,
    /// The scheduler the kernel would attach by default (`mq-deadline` for single-queue
    /// devices, `none` for multi-queue ones).
    pub default_scheduler: &'static str,
}

/// A device model; see the crate docs.
pub trait Device: Driver {
    /// Static facts about the device.
    fn info(&self) -> &DeviceInfo;
    /// When the model next needs [`Device::advance`], if at all.
    fn next_event(&self) -> Option<Ns>;
    /// Process everything due at or before `now`; push finished requests to `done` in
    /// completion order.
    fn advance(&mut self, now: Ns, done: &mut Vec<RqId>);
}

/// One parameter of a profile, for `iosched devices`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// Name.
    pub name: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Value in this profile.
    pub value: String,
    /// Meaning.
    pub help: &'static str,
}

/// A named, built-in device profile.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Name as given to `--device`.
    pub name: &'static str,
    /// What it models.
    pub about: &'static str,
    /// The model's parameters.
    pub kind: ProfileKind,
}

/// Model and parameters of a profile.
#[derive(Clone, Debug)]
pub enum ProfileKind {
    /// An [`ideal::Ideal`] device.
    Ideal(ideal::IdealParams),
}

impl Profile {
    /// Build a fresh device from this profile.
    pub fn build(&self) -> Box<dyn Device> {
        match &self.kind {
            ProfileKind::Ideal(p) => Box::new(ideal::Ideal::new(self.name, p.clone())),
        }
    }
    /// The parameters with units and meaning.
    pub fn params(&self) -> Vec<ParamInfo> {
        match &self.kind {
            ProfileKind::Ideal(p) => p.describe(),
        }
    }
}

/// Unknown device name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device '{0}' (known: {known})", known = profiles().iter().map(|p| p.name).collect::<Vec<_>>().join(", "))]
pub struct UnknownDevice(pub String);

/// All built-in profiles.
pub fn profiles() -> Vec<Profile> {
    vec![
        Profile {
            name: "ideal",
            about: "idealised device: 100 us per request, 2 GB/s, queue depth 32, no cache",
            kind: ProfileKind::Ideal(ideal::IdealParams::default()),
        },
        Profile {
            name: "ideal-sq",
            about: "the ideal device as a single-queue device (kernel default: mq-deadline)",
            kind: ProfileKind::Ideal(ideal::IdealParams {
                nr_hw_queues: 1,
                rotational: false,
                ..Default::default()
            }),
        },
    ]
}

/// The profile called `name`.
pub fn profile(name: &str) -> Result<Profile, UnknownDevice> {
    profiles()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| UnknownDevice(name.to_string()))
}

/// The profile `iosched run` uses when none is named.
pub const DEFAULT_DEVICE: &str = "ideal";
