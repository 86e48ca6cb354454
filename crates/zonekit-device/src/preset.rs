//! Named device presets: the geometries and flash timings of the devices the research used.
//!
//! Where a source gives no figure (die layout of FEMU's ZNS mode, erase-block size of the
//! ZN540) the preset says what it assumes. Timings are for the emulator's [`crate::timing`]
//! model, not measurements of ours.

use crate::timing::{BufferRelease, ControllerConfig, FlashConfig};
use crate::{Geometry, ZoneBehavior};

// The conventional drives' fitted flash timings (the SSD presets `980pro` and `sn540`).
mod conventional;
pub use conventional::{FlashPreset, FLASH_PRESETS, PRO980_FLASH, SN540_FLASH};

/// Where a preset's figure comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Fitted to a drive's published measurements (`zonekit device fit`).
    Fitted,
    /// Taken from a publication or a tool's published defaults.
    Published,
    /// Chosen by us where no source gives it.
    Assumed,
}

impl Provenance {
    pub fn name(self) -> &'static str {
        match self {
            Provenance::Fitted => "fitted",
            Provenance::Published => "published",
            Provenance::Assumed => "assumed",
        }
    }
}

/// A figure's provenance: (figure, where from, the source in a few words).
pub type Source = (&'static str, Provenance, &'static str);

/// A device shape plus the flash behind it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub geometry: Geometry,
    pub behavior: ZoneBehavior,
    pub flash: FlashConfig,
    /// Where each figure comes from; a figure not listed is assumed.
    pub sources: &'static [Source],
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const BLOCK: u64 = 4 * KIB;
const US: u64 = 1000;
const MS: u64 = 1000 * US;

const fn zns(zone_size_bytes: u64, zone_capacity_bytes: u64, zones: u32, open: Option<u32>, active: Option<u32>) -> Geometry {
    Geometry {
        block_size_bytes: BLOCK as u32,
        zone_size_blocks: zone_size_bytes / BLOCK,
        zone_capacity_blocks: zone_capacity_bytes / BLOCK,
        zone_count: zones,
        conventional_zone_count: 0,
        open_zones_max: open,
        active_zones_max: active,
    }
}

/// The figures the `zn540` preset had before issue 48 fitted it (58 µs read, 561 µs program,
/// 3.5 ms erase, 450 MB/s channels; die layout 8 × 4 and 48 MiB erase blocks assumed), kept
/// for `nvmevirt-zns`, seed 004's NVMeVirt device, and for seed 003's tree runs, whose
/// committed results were made with them (their rerun under the fitted model is still open).
pub const ZN540_ASSUMED_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 4,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 58 * US,
    program_ns: 561 * US,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 450_000_000,
    dies_per_zone: 32,
    controller: ControllerConfig::NONE,
};

/// The ZN540 as fitted to its published measurements (issue 48; `zonekit device fit` derives
/// every fitted figure from `crates/zonekit-device/data/zn540/`, and `zonekit device presets`
/// prints where each comes from). 16 dies on 8 channels, 32 KiB pages programmed in stripes
/// over all 16 (one in 30 a slow one), behind a write buffer and the controller of
/// [`crate::timing::ControllerConfig`].
pub const ZN540_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 2,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 29_600,
    program_ns: 419_700,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 329_000_000,
    dies_per_zone: 16,
    controller: ControllerConfig {
        dispatch_ns: 1000,
        write_ns: 2490,
        append_ns: 2530,
        short_append_bytes: 8192,
        short_append_ns: 820,
        short_append_after_ns: 1280,
        handoff_ns: 2290,
        jitter_ns: 650,
        write_done_ns: 7220,
        late_one_in: 0,
        late_ns: 0,
        append_done_ns: 9830,
        host_bytes_per_sec: 2_330_000_000,
        host_overlap_bytes: 8192,
        host_link_serial: true,
        read_done_ns: 26_070,
        slow_page_one_in: 3,
        slow_page_read_ns: 12_290,
        write_buffer_bytes: 8 * MIB,
        stripe_dies: 16,
        implicit_open_ns: 2480,
        open_ns: 8550,
        close_ns: 9690,
        finish_empty_ns: 12_460,
        seal_ns: 1_931_000,
        reset_seal_ns: 2_699_000,
        reset_ns: 1_536_000,
        reset_ns_per_mib: 12_720,
        reset_jitter_ns: 126_000,
        slow_stripe_one_in: 30,
        slow_stripe_ns: 500_000,
        buffer_release: BufferRelease::AtProgramEnd,
        seed: 48,
    },
};

/// FEMU's TLC-class defaults (40 µs / 200 µs / 2 ms). FEMU's ZNS mode does not fix a die layout
/// for zones; we stripe each zone over all 8 × 8 dies.
const FEMU_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 8,
    page_size_bytes: 16 * KIB as u32,
    pages_per_block: 256,
    read_ns: 40 * US,
    program_ns: 200 * US,
    erase_ns: 2 * MS,
    channel_bytes_per_sec: 800_000_000,
    dies_per_zone: 64,
    controller: ControllerConfig::NONE,
};

use Provenance::{Assumed, Fitted, Published};

const TINY_SOURCES: &[Source] = &[];
const OCSSD_SOURCES: &[Source] = &[
    ("zones", Published, "seed 002: 8 ch × 4 LUN × 16 blocks of 32 pages of 32 KiB"),
    ("zone size", Published, "seed 002: a zone is one flash block (an Open-Channel 2.0 chunk)"),
    ("channels × dies", Published, "seed 002: 8 channels × 4 LUNs"),
    ("page", Published, "seed 002: 32 KiB pages (4 × 4 KiB sectors)"),
    ("read / program / erase", Published, "seed 002: 101 µs / 116 µs / 434 µs"),
    ("channel", Published, "bounded by seed 002's ~300 MB/s sequential writes (8 × 40 MB/s)"),
    ("dies per zone", Published, "seed 002: a chunk lives on one LUN"),
];
const FEMU_SOURCES: &[Source] = &[
    ("zones", Published, "seed 000: FEMU ZNS, 100 GiB in 32 MiB zones"),
    ("zone size", Published, "seed 000"),
    ("open / active limit", Published, "seed 000: 7 open zones"),
    ("read / program / erase", Published, "FEMU's TLC-class defaults: 40 µs / 200 µs / 2 ms"),
];
/// The ZN540's sources. Fitted figures come from `zonekit device fit` over the `role = fit`
/// rows of `crates/zonekit-device/data/zn540/` (Doekemeijer, Tehrany et al., CLUSTER 2023,
/// data in Krien/NVMeBenchmarks at 01f40f1c); `docs/results/devices.md` has the derivations.
const ZN540_SOURCES: &[Source] = &[
    ("zones", Published, "904 zones (the characterisation's zone report)"),
    ("zone size", Published, "2 GiB, capacity 1077 MiB (the characterisation's zone report)"),
    ("open / active limit", Published, "14: the limit the characterisation ran with (fio max_open_zones); the drive's own is not in the data"),
    ("channels × dies", Assumed, "16 dies fit the random-read curve; 8 channels carry its peak bandwidth"),
    ("page", Assumed, "a two-plane 16 KiB TLC page"),
    (
        "read / program / erase",
        Fitted,
        "read: 4 KiB reads at QD256; program: the 1.2 GB/s write bandwidth less the slow stripes' share; erase unused (resets do not erase on the dies)",
    ),
    ("channel", Fitted, "peak random-read bandwidth ÷ 8"),
    ("dies per zone", Assumed, "every zone over all 16 dies (one zone writes at the device's bandwidth)"),
    ("stripe", Assumed, "all 16 dies program together"),
    ("slow stripes", Fitted, "the p99 and p99.9 of deep single-zone appends (16-128 KiB, ≥ 4 MiB queued): a few rare long programs; the program time gives back their mean share"),
    ("write buffer", Assumed, "a stripe for each of 14 open zones and two more"),
    ("dispatch", Assumed, "below the cheapest command seen (2.1 µs)"),
    ("write / append engine", Fitted, "4 KiB writes over 8-14 zones (186 KIOPS); 8 KiB appends to one zone at QD4 (p50 21.4 µs, bisection on the model)"),
    ("hand-off / jitter", Fitted, "4 KiB writes to 2 zones at QD1; QD1's p99 over its median"),
    (
        "short appends",
        Fitted,
        "before the completion: 4 KiB appends at QD1 against 8 KiB ones (means; 4 and 8 KiB writes take the same time); after it: the rest of 4 KiB appends' 132 KIOPS at QD ≥ 4; the threshold is the smallest size the data has without it, anywhere above 4 KiB fits",
    ),
    ("write / append completion", Fitted, "4 KiB write and append at QD1 (the append's keeps 8 KiB's too)"),
    ("host link", Fitted, "QD1 write latency against block size, 16-128 KiB; one write at a time: of the runs of 16 KiB or more with others in flight the lowest p50 is 1.06 of the time their bytes take over it"),
    ("host overlap", Assumed, "4 and 8 KiB writes take the same time at QD1"),
    ("read completion", Fitted, "4 KiB read at QD1 (69 µs)"),
    (
        "slow pages",
        Fitted,
        "4 KiB reads at QD1 take one of two times (fio: 67-69 µs to the 60th percentile, 80-82 µs from the 70th): the extra sense is p99 less p50; 1 in 3 assumed (TLC with 2-3-2 coding)",
    ),
    ("implicit open", Fitted, "first write or append to an empty zone"),
    ("open / close / finish of an empty zone", Fitted, "the harness's open, close, empty finish"),
    ("seal", Fitted, "finish of a zone one block short of full"),
    ("reset's seal", Fitted, "reset of an open, partly programmed zone against its reset after a finish (fills of 67-538 MiB)"),
    ("reset", Fitted, "reset after finish against the bytes written"),
    ("reset spread", Fitted, "a reset's p99 over its p50, for resets of written zones (an exponential)"),
];
const NVMEVIRT_SOURCES: &[Source] = &[
    ("zones", Published, "seed 004: NVMeVirt with 64 zones of 128 MiB"),
    ("zone size", Published, "seed 004"),
    ("read / program / erase", Assumed, "the old assumed ZN540 figures (58 µs / 561 µs / 3.5 ms), which seed 004's results were made with"),
];

pub const PRESETS: [Preset; 5] = [
    Preset {
        name: "tiny",
        summary: "64 zones of 4 MiB (256 MiB), 8 open / 12 active: for tests and demos",
        geometry: zns(4 * MIB, 4 * MIB, 64, Some(8), Some(12)),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FlashConfig { channels: 4, dies_per_channel: 2, dies_per_zone: 8, ..FEMU_FLASH },
        sources: TINY_SOURCES,
    },
    Preset {
        name: "ocssd-thesis",
        // Seed 002: 8 ch × 4 LUN × 16 blocks × 32 pages of 32 KiB; a zone is one flash block on
        // one LUN (an Open-Channel 2.0 chunk). The thesis measured ~300 MB/s sequential writes,
        // which bounds the channels at 40 MB/s each (8 × 40 = 320 MB/s).
        summary: "seed 002's open-channel SSD: 512 chunks of 1 MiB (one block on one of 32 LUNs)",
        geometry: zns(MIB, MIB, 512, None, None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FlashConfig {
            channels: 8,
            dies_per_channel: 4,
            page_size_bytes: 32 * KIB as u32,
            pages_per_block: 32,
            read_ns: 101 * US,
            program_ns: 116 * US,
            erase_ns: 434 * US,
            channel_bytes_per_sec: 40_000_000,
            dies_per_zone: 1,
            controller: ControllerConfig::NONE,
        },
        sources: OCSSD_SOURCES,
    },
    Preset {
        name: "femu-zns",
        summary: "seed 000's FEMU ZNS device: 100 GiB in 3200 zones of 32 MiB, 7 open zones",
        geometry: zns(32 * MIB, 32 * MIB, 3200, Some(7), None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FEMU_FLASH,
        sources: FEMU_SOURCES,
    },
    Preset {
        name: "zn540",
        summary: "WD Ultrastar DC ZN540 1 TB: 904 zones of 2 GiB (1077 MiB usable), 14 open, fitted",
        geometry: zns(2048 * MIB, 1077 * MIB, 904, Some(14), Some(14)),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: ZN540_FLASH,
        sources: ZN540_SOURCES,
    },
    Preset {
        name: "nvmevirt-zns",
        summary: "seed 004's NVMeVirt ZNS device: 64 × 128 MiB zones (8 GiB), the pre-fit ZN540 flash",
        geometry: zns(128 * MIB, 128 * MIB, 64, None, None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: ZN540_ASSUMED_FLASH,
        sources: NVMEVIRT_SOURCES,
    },
];

pub fn find(name: &str) -> Option<Preset> {
    PRESETS.iter().find(|p| p.name == name).copied()
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// The flash timing named `name`: a zoned preset's, or a conventional drive's
/// ([`FLASH_PRESETS`]); what an SSD preset's timing names.
pub fn find_flash(name: &str) -> Option<FlashConfig> {
    find(name).map(|p| p.flash).or_else(|| FLASH_PRESETS.iter().find(|p| p.name == name).map(|p| p.flash))
}

/// One figure of a preset, its value and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    pub name: &'static str,
    pub value: String,
    pub provenance: Provenance,
    pub source: &'static str,
}

/// The flash's and its controller's figures (the zone management's only for a zoned device).
fn flash_figures(f: &FlashConfig, zoned: bool) -> Vec<(&'static str, String)> {
    let c = &f.controller;
    let us = |ns: u64| format!("{:.2} µs", ns as f64 / 1e3);
    let mut v: Vec<(&'static str, String)> = vec![
        ("channels × dies", format!("{} × {}", f.channels, f.dies_per_channel)),
        ("page", format!("{} KiB, {} a block", f.page_size_bytes / 1024, f.pages_per_block)),
        ("read / program / erase", format!("{} / {} / {}", us(f.read_ns), us(f.program_ns), us(f.erase_ns))),
        ("channel", format!("{} MB/s", f.channel_bytes_per_sec / 1_000_000)),
        ("dies per zone", f.dies_per_zone.to_string()),
    ];
    if c.enabled() {
        v.extend([
            ("stripe", format!("{} dies", c.stripe_dies)),
            ("slow stripes", if c.slow_stripe_one_in == 0 { "none".to_string() } else { format!("1 in {}, {} more on average", c.slow_stripe_one_in, us(c.slow_stripe_ns)) }),
            (
                "write buffer",
                match c.buffer_release {
                    BufferRelease::AtProgramEnd => format!("{} MiB", c.write_buffer_bytes >> 20),
                    BufferRelease::OverProgram => format!("{} MiB, a page's bytes freed evenly over its program", c.write_buffer_bytes >> 20),
                },
            ),
            ("dispatch", us(c.dispatch_ns)),
            ("write / append engine", format!("{} / {}", us(c.write_ns), us(c.append_ns))),
            ("hand-off / jitter", format!("{} / {}", us(c.handoff_ns), us(c.jitter_ns))),
            ("write / append completion", format!("{} / {}", us(c.write_done_ns), us(c.append_done_ns))),
            ("host link", format!("{:.2} GB/s, {}", c.host_bytes_per_sec as f64 / 1e9, if c.host_link_serial { "one write at a time" } else { "writes overlap" })),
            ("host overlap", format!("{} KiB", c.host_overlap_bytes / 1024)),
            ("read completion", us(c.read_done_ns)),
            ("slow pages", if c.slow_page_one_in == 0 { "none".to_string() } else { format!("1 in {}, {} more to sense", c.slow_page_one_in, us(c.slow_page_read_ns)) }),
        ]);
        if c.late_one_in > 0 {
            v.push(("late completions", format!("1 in {}, {} later", c.late_one_in, us(c.late_ns))));
        }
        if zoned {
            v.extend([
                (
                    "short appends",
                    if c.short_append_ns == 0 && c.short_append_after_ns == 0 {
                        "none".to_string()
                    } else {
                        format!("under {} KiB, {} more in the engine before completion, {} after", c.short_append_bytes / 1024, us(c.short_append_ns), us(c.short_append_after_ns))
                    },
                ),
                ("implicit open", us(c.implicit_open_ns)),
                ("open / close / finish of an empty zone", format!("{} / {} / {}", us(c.open_ns), us(c.close_ns), us(c.finish_empty_ns))),
                ("seal", format!("{:.3} ms", c.seal_ns as f64 / 1e6)),
                ("reset's seal", format!("{:.3} ms", c.reset_seal_ns as f64 / 1e6)),
                ("reset", format!("{:.3} ms + {} per MiB written", c.reset_ns as f64 / 1e6, us(c.reset_ns_per_mib))),
                (
                    "reset spread",
                    if c.reset_jitter_ns == 0 {
                        "none".to_string()
                    } else {
                        format!("exponential, mean {:.3} ms, when the host wrote to the zone", c.reset_jitter_ns as f64 / 1e6)
                    },
                ),
            ]);
        }
    }
    v
}

fn with_sources(v: Vec<(&'static str, String)>, sources: &'static [Source]) -> Vec<Figure> {
    v.into_iter()
        .map(|(name, value)| {
            let (provenance, source) = sources.iter().find(|s| s.0 == name).map_or((Provenance::Assumed, "no source gives it"), |s| (s.1, s.2));
            Figure { name, value, provenance, source }
        })
        .collect()
}

impl Preset {
    /// Every figure of the preset with its provenance (the controller's only where it has
    /// one), as `zonekit device presets` prints them.
    pub fn figures(&self) -> Vec<Figure> {
        let g = &self.geometry;
        let limit = |l: Option<u32>| l.map_or("none".to_string(), |v| v.to_string());
        let mut v: Vec<(&'static str, String)> = vec![
            ("zones", g.zone_count.to_string()),
            ("zone size", format!("{} MiB, capacity {} MiB", g.zone_size_bytes() >> 20, g.zone_capacity_bytes() >> 20)),
            ("open / active limit", format!("{} / {}", limit(g.open_zones_max), limit(g.active_zones_max))),
        ];
        v.extend(flash_figures(&self.flash, true));
        with_sources(v, self.sources)
    }

    /// The same device with zones of `zone_size_bytes`: the capacity stays, so the zone count
    /// changes (seed 001 asks how zone size changes what fits on an 8 GiB device). Refused when
    /// the zones are not fully writable (zone capacity below zone size: which part of a resized
    /// zone would be writable is not defined) or the new size does not divide the device into
    /// whole zones of whole blocks.
    pub fn with_zone_size_bytes(&self, zone_size_bytes: u64) -> Result<Preset, String> {
        let g = self.geometry;
        if g.zone_capacity_blocks != g.zone_size_blocks || g.conventional_zone_count != 0 {
            return Err(format!("preset {}: zones are not fully writable sequential zones, so their size cannot be changed", self.name));
        }
        let device_bytes = g.total_blocks() * g.block_size_bytes as u64;
        let block = g.block_size_bytes as u64;
        if zone_size_bytes == 0 || zone_size_bytes % block != 0 || device_bytes % zone_size_bytes != 0 {
            return Err(format!("preset {}: a zone of {zone_size_bytes} bytes does not divide the {device_bytes}-byte device into whole zones of {block}-byte blocks", self.name));
        }
        let zone_count = u32::try_from(device_bytes / zone_size_bytes).map_err(|_| format!("preset {}: too many zones of {zone_size_bytes} bytes", self.name))?;
        let geometry = Geometry { zone_size_blocks: zone_size_bytes / block, zone_capacity_blocks: zone_size_bytes / block, zone_count, ..g };
        geometry.validate().map_err(|e| format!("preset {} with {zone_size_bytes}-byte zones: {e}", self.name))?;
        Ok(Preset { geometry, ..*self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for p in PRESETS {
            p.geometry.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            p.flash.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
    }

    #[test]
    fn every_source_names_a_figure_and_only_zn540_has_a_controller() {
        for p in PRESETS {
            let names: Vec<&str> = p.figures().iter().map(|f| f.name).collect();
            for s in p.sources {
                assert!(names.contains(&s.0), "{}: a source for {:?}, which is no figure of it", p.name, s.0);
            }
            // Every other preset keeps the plain flash model it always had.
            assert_eq!(p.flash.controller.enabled(), p.name == "zn540", "{}", p.name);
        }
        let zn540 = find("zn540").unwrap();
        assert!(zn540.figures().iter().all(|f| f.source != "no source gives it"), "every zn540 figure says where it comes from");
        assert_eq!(find("nvmevirt-zns").unwrap().flash, ZN540_ASSUMED_FLASH, "seed 004's device keeps the figures its results were made with");
    }

    #[test]
    fn presets_match_their_sources() {
        let zn540 = find("zn540").unwrap().geometry;
        assert_eq!((zn540.zone_count, zn540.zone_size_bytes(), zn540.zone_capacity_bytes()), (904, 2048 * MIB, 1077 * MIB));
        let femu = find("femu-zns").unwrap().geometry;
        assert_eq!(femu.zone_count as u64 * femu.zone_size_bytes(), 100 * 1024 * MIB);
        let ocssd = find("ocssd-thesis").unwrap();
        assert_eq!(ocssd.geometry.zone_count as u64 * ocssd.geometry.zone_size_bytes(), 512 * MIB);
        assert_eq!(ocssd.flash.die_count(), 32);
        let nvmevirt = find("nvmevirt-zns").unwrap().geometry;
        assert_eq!(nvmevirt.zone_count as u64 * nvmevirt.zone_size_bytes(), 8 * 1024 * MIB);
    }

    #[test]
    fn resizing_zones_keeps_the_capacity_and_refuses_what_cannot_be_cut() {
        let nvmevirt = find("nvmevirt-zns").unwrap();
        for (mib, zones) in [(64, 128), (128, 64), (256, 32)] {
            let g = nvmevirt.with_zone_size_bytes(mib * MIB).unwrap().geometry;
            assert_eq!((g.zone_count, g.zone_size_bytes(), g.zone_capacity_bytes()), (zones, mib * MIB, mib * MIB));
            assert_eq!(g.total_blocks(), nvmevirt.geometry.total_blocks());
        }
        assert!(nvmevirt.with_zone_size_bytes(100 * MIB).unwrap_err().contains("does not divide"));
        assert!(nvmevirt.with_zone_size_bytes(0).is_err());
        assert!(nvmevirt.with_zone_size_bytes(MIB + 1).is_err());
        assert!(find("zn540").unwrap().with_zone_size_bytes(1024 * MIB).unwrap_err().contains("not fully writable"));
    }
}
