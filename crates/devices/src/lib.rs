//! Device models: what sits behind the block layer's driver interface.
//!
//! A device model accepts requests through [`blk::mq::Driver::queue_rq`] (refusing
//! them with a busy status when it cannot take more), serves them in virtual time and
//! reports completions. It is event driven: after every interaction the simulator asks
//! [`Device::next_event`] when the model next needs attention and calls
//! [`Device::advance`] at that time, which pushes the requests finished by then.
//!
//! Models: [`ideal::Ideal`] (fixed latency, a bandwidth pipe, a queue depth),
//! [`hdd::Hdd`] (a rotating disk with NCQ and caches), [`ssd::Flash`] (SATA and NVMe
//! flash SSDs, see also [`nvme`]) and [`raid0::Raid0`] (a caching RAID-0 controller
//! over members of any model). Profiles (named, documented parameter sets) are data
//! files under `profiles/`, embedded in the binary and listed by [`profiles`]; users
//! load their own with [`load_profile_file`] (format and validation: [`profile`](mod@profile)).
//!
//! Every model is deterministic: time comes from the caller, and the little
//! randomness there is (a disk's spindle phase) comes from a seed in the profile.

pub mod completions;
pub mod disksim;
mod extents;
pub mod hdd;
pub mod ideal;
pub mod null;
pub mod nvme;
pub mod profile;
pub mod raid0;
pub mod ssd;
pub mod zoned;

pub use profile::ProfileError;

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
    /// Where completions are signalled (what a host model charges for them).
    pub completion: CompletionCpu,
}

/// Where a device signals completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionCpu {
    /// An interrupt on the CPU its hardware queue's vector targets (the queue's
    /// first CPU), as NVMe and AHCI do.
    Vector,
    /// On the submitting CPU (null_blk): through an interrupt there (`irq`, the
    /// timer mode) or none (completion in `queue_rq` or by softirq).
    Submitter {
        /// A timer interrupt signals the completion.
        irq: bool,
    },
}

/// A device model; see the crate docs.
pub trait Device: Driver {
    /// Static facts about the device.
    fn info(&self) -> &DeviceInfo;
    /// How request `id`, just pushed by [`Device::advance`], ended: `None` for
    /// success, or the zone error the device reports (only zoned devices
    /// fail requests).
    fn take_error(&mut self, _id: RqId) -> Option<zoned::ZoneError> {
        None
    }
    /// The zone layout, for a zoned device.
    fn zone_geometry(&self) -> Option<zoned::ZoneGeometry> {
        None
    }
    /// A zone report (`report_zones`), for a zoned device; empty otherwise.
    fn report_zones(&self) -> Vec<blk::zoned::BlkZone> {
        Vec::new()
    }
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

/// A named device profile (built in, or loaded from a file).
#[derive(Clone, Debug)]
pub struct Profile {
    /// Name as given to `--device`.
    pub name: String,
    /// What it models.
    pub about: String,
    /// The model's parameters.
    pub kind: ProfileKind,
    /// The zone layout of a zoned device (a `[zoned]` table), if it is one.
    pub zoned: Option<zoned::ZoneGeometry>,
}

/// Model and parameters of a profile.
#[derive(Clone, Debug)]
pub enum ProfileKind {
    /// An [`ideal::Ideal`] device.
    Ideal(ideal::IdealParams),
    /// A [`null::Null`] device (null_blk).
    Null(null::NullParams),
    /// A [`hdd::Hdd`] disk.
    Hdd(hdd::HddParams),
    /// A [`ssd::Flash`] SSD (SATA or NVMe).
    Flash(ssd::FlashParams),
    /// A [`raid0::Raid0`] volume.
    Raid0(raid0::Raid0Params),
    /// A table-driven disk ([`disksim::TableDisk`], e.g. imported from DiskSim).
    HddTable(Box<disksim::TableParams>),
}

impl Profile {
    /// Build a fresh device from this profile.
    pub fn build(&self) -> Box<dyn Device> {
        let dev = self.build_media();
        match self.zoned {
            Some(geo) => Box::new(zoned::ZonedDevice::new(dev, geo)),
            None => dev,
        }
    }
    /// The media model alone.
    fn build_media(&self) -> Box<dyn Device> {
        match &self.kind {
            ProfileKind::Ideal(p) => Box::new(ideal::Ideal::new(&self.name, p.clone())),
            ProfileKind::Null(p) => Box::new(null::Null::new(&self.name, p.clone())),
            ProfileKind::Hdd(p) => Box::new(hdd::Hdd::new(&self.name, p.clone())),
            ProfileKind::Flash(p) => Box::new(ssd::Flash::new(&self.name, p.clone())),
            ProfileKind::Raid0(p) => Box::new(raid0::Raid0::new(&self.name, p.clone())),
            ProfileKind::HddTable(p) => {
                Box::new(disksim::TableDisk::new(&self.name, (**p).clone()))
            }
        }
    }
    /// The model's name as written in profile files (`model = ...`).
    pub fn model(&self) -> &'static str {
        match &self.kind {
            ProfileKind::Ideal(_) => "ideal",
            ProfileKind::Null(_) => "null",
            ProfileKind::Hdd(_) => "hdd",
            ProfileKind::Flash(_) => "ssd",
            ProfileKind::Raid0(_) => "raid0",
            ProfileKind::HddTable(_) => "hdd-table",
        }
    }
    /// The parameters with units and meaning.
    pub fn params(&self) -> Vec<ParamInfo> {
        let mut v = match &self.kind {
            ProfileKind::Ideal(p) => p.describe(),
            ProfileKind::Null(p) => p.describe(),
            ProfileKind::Hdd(p) => p.describe(),
            ProfileKind::Flash(p) => p.describe(),
            ProfileKind::Raid0(p) => p.describe(),
            ProfileKind::HddTable(p) => p.describe(),
        };
        if let Some(g) = &self.zoned {
            v.extend(g.describe());
        }
        v
    }
}

/// Unknown device name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device '{0}' (known: {known})", known = profiles().iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", "))]
pub struct UnknownDevice(pub String);

/// The built-in profile files, in dependency order (RAID members first).
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    ("hdd-7200.toml", include_str!("../profiles/hdd-7200.toml")),
    (
        "mg04aca400n.toml",
        include_str!("../profiles/mg04aca400n.toml"),
    ),
    (
        "raid0-2x-mg04aca400n.toml",
        include_str!("../profiles/raid0-2x-mg04aca400n.toml"),
    ),
    ("ssd-sata.toml", include_str!("../profiles/ssd-sata.toml")),
    ("nullb.toml", include_str!("../profiles/nullb.toml")),
    ("nullb-mq.toml", include_str!("../profiles/nullb-mq.toml")),
    (
        "nvme-600p-128g.toml",
        include_str!("../profiles/nvme-600p-128g.toml"),
    ),
    (
        "nvme-600p-128g-trimmed.toml",
        include_str!("../profiles/nvme-600p-128g-trimmed.toml"),
    ),
    ("nvme-gen4.toml", include_str!("../profiles/nvme-gen4.toml")),
    (
        "mg04-smr-hm.toml",
        include_str!("../profiles/mg04-smr-hm.toml"),
    ),
    ("zns-zn540.toml", include_str!("../profiles/zns-zn540.toml")),
];

fn ideal_profiles() -> Vec<Profile> {
    vec![
        Profile {
            name: "ideal".into(),
            about: "idealised device: 100 us per request, 2 GB/s, queue depth 32, no cache".into(),
            kind: ProfileKind::Ideal(ideal::IdealParams::default()),
            zoned: None,
        },
        Profile {
            name: "ideal-sq".into(),
            about: "the ideal device as a single-queue device (kernel default: mq-deadline)".into(),
            kind: ProfileKind::Ideal(ideal::IdealParams {
                nr_hw_queues: 1,
                rotational: false,
                ..Default::default()
            }),
            zoned: None,
        },
    ]
}

/// All built-in profiles.
pub fn profiles() -> Vec<Profile> {
    let mut all = ideal_profiles();
    all.extend((0..BUILTIN_FILES.len()).map(|i| builtin(i).clone()));
    all
}

/// Built-in profile file `i`, parsed once per process and only when asked for:
/// fitting a disk's seek curve is most of the start-up time, and a run names
/// one device.
fn builtin(i: usize) -> &'static Profile {
    static PARSED: [std::sync::OnceLock<Profile>; BUILTIN_FILES.len()] =
        [const { std::sync::OnceLock::new() }; BUILTIN_FILES.len()];
    PARSED[i].get_or_init(|| {
        let (file, text) = BUILTIN_FILES[i];
        parse_profile(&format!("<builtin {file}>"), text, &|n| profile(n).ok())
            .unwrap_or_else(|e| panic!("built-in profile is invalid: {e}"))
    })
}

/// The profile called `name`.
pub fn profile(name: &str) -> Result<Profile, UnknownDevice> {
    if let Some(p) = ideal_profiles().into_iter().find(|p| p.name == name) {
        return Ok(p);
    }
    // A built-in file is named after its profile; a test keeps them in step.
    BUILTIN_FILES
        .iter()
        .position(|(file, _)| file.strip_suffix(".toml") == Some(name))
        .map(|i| builtin(i).clone())
        .ok_or_else(|| UnknownDevice(name.to_string()))
}

/// Parse and validate a profile document called `file`; `lookup` resolves the
/// profiles it refers to (a RAID's members).
pub fn parse_profile(
    file: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<Profile>,
) -> Result<Profile, ProfileError> {
    let mut d = profile::Doc::parse(file, text)?;
    let name = d.str("name")?;
    if name.is_empty() || name.chars().any(|c| c.is_whitespace()) {
        return Err(d.err("name", "must be non-empty without spaces"));
    }
    let about = d.str("about")?;
    let model = d.str("model")?;
    let kind = match model.as_str() {
        "hdd" => ProfileKind::Hdd(hdd::HddParams::from_doc(&mut d)?),
        "ssd" => ProfileKind::Flash(ssd::FlashParams::from_doc(&mut d)?),
        "raid0" => ProfileKind::Raid0(raid0::Raid0Params::from_doc(&mut d, lookup)?),
        "ideal" => ProfileKind::Ideal(ideal::IdealParams::from_doc(&mut d)?),
        "null" => ProfileKind::Null(null::NullParams::from_doc(&mut d)?),
        "hdd-table" => ProfileKind::HddTable(Box::new(disksim::TableParams::from_doc(&mut d)?)),
        other => {
            return Err(d.err(
                "model",
                format!(
                    "unknown model '{other}': expected hdd, hdd-table, ssd, raid0, ideal or null"
                ),
            ))
        }
    };
    let zoned = zoned_geometry(&mut d, &kind)?;
    d.finish()?;
    Ok(Profile {
        name,
        about,
        kind,
        zoned,
    })
}

/// The `[zoned]` table, for the models that can be zoned: a disk speaks
/// ZBC/ZAC, an NVMe SSD ZNS, a SATA SSD ZAC.
fn zoned_geometry(
    d: &mut profile::Doc,
    kind: &ProfileKind,
) -> Result<Option<zoned::ZoneGeometry>, ProfileError> {
    let (capacity, protocol) = match kind {
        ProfileKind::Hdd(p) => (p.capacity_bytes / 512, zoned::ZoneProtocol::Zbc),
        ProfileKind::Flash(p) => (
            p.capacity_bytes / 512,
            match p.interface {
                ssd::Interface::Nvme => zoned::ZoneProtocol::Zns,
                ssd::Interface::Sata => zoned::ZoneProtocol::Zbc,
            },
        ),
        // Other models with a [zoned] table: its keys are unknown fields.
        _ => return Ok(None),
    };
    zoned::ZoneGeometry::from_doc(d, capacity, protocol)
}

/// Load a user's profile file (RAID members may name built-in profiles).
pub fn load_profile_file(path: &std::path::Path) -> Result<Profile, ProfileError> {
    let (file, text) = profile::read_file(path)?;
    parse_profile(&file, &text, &|n| profile(n).ok())
}

/// The profile `iosched run` uses when none is named.
pub const DEFAULT_DEVICE: &str = "hdd-7200";
