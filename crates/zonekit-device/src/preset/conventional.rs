//! The flash and controller behind the two conventional drives of the ZN540's characterisation
//! (issue 48), fitted to their published fio runs: the Samsung 980 PRO 2 TB and the WD SN540
//! (`crates/zonekit-device/data/980pro/`, `data/sn540/`; `docs/results/devices-data.md`). The
//! SSD presets `980pro` and `sn540` (`zonekit_ssd::preset`) take their timing from here;
//! `zonekit_lab::device::conventional_fit` derives every fitted figure from the rows the fit
//! reads, and a test there checks these constants against it.
//!
//! The controller is the ZN540's ([`crate::timing::ControllerConfig`]): a write completes once
//! its data is in the buffer, the buffer drains in stripes (a page on every die, programmed
//! together), a write waits when the buffer is full. The buffer gives bytes back as the drive's
//! fit rows say (`conventional_fit`): the SN540's, as the ZN540's, a stripe's at its program's
//! end; the 980 PRO's, which no fit row tells, a page's evenly over its program
//! ([`BufferRelease::OverProgram`], assumed). A conventional drive has no zones, so the
//! zone-management figures are zero; the append figures repeat the write's (unused).

use super::{Figure, Provenance, Source};
use crate::timing::{BufferRelease, ControllerConfig, FlashConfig};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const US: u64 = 1000;

/// A conventional drive's flash timing, its figures' sources.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlashPreset {
    pub name: &'static str,
    pub summary: &'static str,
    pub flash: FlashConfig,
    pub sources: &'static [Source],
}

impl FlashPreset {
    /// Every figure with its provenance, as `zonekit device presets` prints them.
    pub fn figures(&self) -> Vec<Figure> {
        super::with_sources(super::flash_figures(&self.flash, false), self.sources)
    }
}

/// The controller of a conventional drive: the zoned figures zero.
#[allow(clippy::too_many_arguments)]
const fn controller(
    dispatch_ns: u64,
    write_ns: u64,
    jitter_ns: u64,
    write_done_ns: u64,
    host_bytes_per_sec: u64,
    read_done_ns: u64,
    stripe_dies: u32,
    buffer_release: BufferRelease,
) -> ControllerConfig {
    ControllerConfig {
        dispatch_ns,
        write_ns,
        append_ns: write_ns,
        short_append_bytes: 0,
        short_append_ns: 0,
        short_append_after_ns: 0,
        handoff_ns: 0,
        jitter_ns,
        write_done_ns,
        late_one_in: 0,
        late_ns: 0,
        append_done_ns: write_done_ns,
        host_bytes_per_sec,
        host_overlap_bytes: 0,
        host_link_serial: false,
        read_done_ns,
        slow_page_one_in: 0,
        slow_page_read_ns: 0,
        write_buffer_bytes: 8 * MIB,
        stripe_dies,
        // Each drive's own, fitted (below).
        slow_stripe_one_in: 0,
        slow_stripe_ns: 0,
        implicit_open_ns: 0,
        open_ns: 0,
        close_ns: 0,
        finish_empty_ns: 0,
        seal_ns: 0,
        reset_seal_ns: 0,
        reset_ns: 0,
        reset_ns_per_mib: 0,
        reset_jitter_ns: 0,
        buffer_release,
        seed: 48,
    }
}

/// The 980 PRO 2 TB: 32 dies on 8 channels, 32 KiB pages, 1 MiB stripes.
pub const PRO980_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 4,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 40 * US,
    program_ns: 341_370,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 1_200_000_000,
    dies_per_zone: 32,
    controller: ControllerConfig { late_one_in: 450, late_ns: 11_810, ..controller(1000, 1250, 100, 5100, 2_890_000_000, 0, 32, BufferRelease::OverProgram) },
};

/// The SN540: 32 dies on 8 channels, 32 KiB pages, 1 MiB stripes.
pub const SN540_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 4,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 56_000,
    program_ns: 827_620,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 800_000_000,
    dies_per_zone: 32,
    controller: ControllerConfig {
        slow_stripe_one_in: 20,
        slow_stripe_ns: 300 * US,
        slow_page_one_in: 3,
        slow_page_read_ns: 12_290,
        host_link_serial: true,
        ..controller(1000, 1870, 1410, 2900, 1_520_000_000, 7000, 32, BufferRelease::AtProgramEnd)
    },
};

use Provenance::{Assumed, Fitted};

const PRO980_SOURCES: &[Source] = &[
    ("channels × dies", Assumed, "8 channels (the controller's); 32 dies: 2 TB of 512 Gbit TLC dies. No reads in the data to fit them"),
    ("page", Assumed, "a two-plane 16 KiB TLC page"),
    ("read / program / erase", Fitted, "program: a stripe ÷ the median write bandwidth at QD512 (3.07 GB/s); read: FEMU's 40 µs, assumed (the data has no reads); erase unused"),
    ("channel", Assumed, "1.2 GB/s (a Toggle 4.0 channel); the data has no reads to fit it, and writes need only 0.38 GB/s a channel"),
    ("dies per zone", Assumed, "a reclaim unit over all 32 dies"),
    ("stripe", Assumed, "all 32 dies program together (1 MiB)"),
    ("slow stripes", Fitted, "none: its QD512 writes' p99.9 is 1.76 × their p99 (median), rare long stalls, which slow stripes do not make (a rule chosen after seeing its held-out rows with the stripes the grid search gives, devices.md)"),
    (
        "write buffer",
        Assumed,
        "8 MiB, as the ZN540's; no run of the data fills it below its drain rate. Freed evenly over each page's program, not per stripe: no fit row tells (no QD1 write reaches 90 % of the drain); chosen after seeing the held-out QD2-256 writes' even latencies (8 KiB QD8: p50 20.6 µs, p99 23.7 µs), which therefore do not test it",
    ),
    ("dispatch", Assumed, "1 µs, as the ZN540's"),
    ("write / append engine", Fitted, "1 ÷ 4 KiB write IOPS at QD512 (739 K) − jitter"),
    ("hand-off / jitter", Fitted, "hand-off 0 (assumed: 4 KiB QD2 runs at 1.99 × QD1); jitter (p99 − p50) ÷ ln 50 of 4 KiB writes at QD1"),
    ("write / append completion", Fitted, "intercept of QD1 write mean latency against block size (4-128 KiB) − dispatch − engine − jitter − the late completions' mean"),
    (
        "late completions",
        Fitted,
        "its QD1 writes' p99 sits 0.4-0.6 µs above p50 and p99.9 10-13 µs (to 64 KiB): a tail apart, as many at QD16; late by the median p99.9 − p50; the share, 1 in 450, is assumed (fio's p99.5 and p99.9 put it between 1 in 200 and 1 in 1,000)",
    ),
    ("host link", Fitted, "slope of QD1 write mean latency against block size, 4-128 KiB (least squares); writes overlap: of the runs of 16 KiB or more with others in flight the lowest p50 is 0.93 of the time their bytes take over it"),
    ("host overlap", Fitted, "0: QD1 latency is linear in size from 4 KiB"),
    ("read completion", Assumed, "0: the data has no reads"),
    ("slow pages", Assumed, "none: the data has no reads"),
];

const SN540_SOURCES: &[Source] = &[
    (
        "channels × dies",
        Fitted,
        "8 channels as the ZN540 (assumed); 32 dies: of 8-64, the count whose fitted sense time fits QD1's latency and gives 4 KiB random reads at QD32 closest",
    ),
    ("page", Assumed, "a two-plane 16 KiB TLC page, as the ZN540's"),
    (
        "read / program / erase",
        Fitted,
        "read: 4 KiB random reads at QD256 (460 K, bisection on the model); program: a stripe ÷ the median write bandwidth at QD512 (1.24 GB/s), less the slow stripes' mean share; erase unused",
    ),
    ("channel", Assumed, "FEMU's default 800 MB/s; the SN540's reads are 4 KiB only and do not fix it (their peak needs 235 MB/s a channel)"),
    ("dies per zone", Assumed, "a reclaim unit over all 32 dies"),
    ("stripe", Assumed, "all 32 dies program together (1 MiB)"),
    ("slow stripes", Fitted, "grid search on the p99 and p99.9 of the QD1 and QD512 writes (its QD512 p99.9 is 1.34 × p99: frequent short stalls)"),
    (
        "write buffer",
        Fitted,
        "8 MiB, as the ZN540's (assumed); a stripe's bytes freed when its program ends: the bandwidth-bound QD1 writes (32-128 KiB) have p50 0.81 of their mean (median; 0.70-0.92), admitted unevenly",
    ),
    ("dispatch", Assumed, "1 µs, as the ZN540's"),
    ("write / append engine", Fitted, "1 ÷ 4 KiB write IOPS at QD512 (305 K) − jitter: the drain binds at the same rate, so an upper bound"),
    ("hand-off / jitter", Fitted, "hand-off 0 (assumed); jitter (p99 − p50) ÷ ln 50 of 4 KiB writes at QD1"),
    ("write / append completion", Fitted, "intercept of QD1 write mean latency against block size (4-16 KiB, below 90 % of the drain) − dispatch − engine − jitter"),
    ("host link", Fitted, "slope of QD1 write mean latency against block size, 4-16 KiB (least squares); one write at a time: of the runs of 16 KiB or more with others in flight the lowest p50 is 1.23 of the time their bytes take over it (the held-out QD2-4 128 KiB writes go as low as 0.69)"),
    ("host overlap", Fitted, "0: QD1 latency is linear in size from 4 KiB"),
    ("read completion", Fitted, "4 KiB random read at QD1, p50 69.12 µs = dispatch + sense + transfer + this"),
    ("slow pages", Fitted, "4 KiB random reads at QD1 take one of two times (p50 69.12 µs, p99 81.41 µs, as the ZN540's): the extra sense is p99 less p50; 1 in 3 assumed (TLC with 2-3-2 coding)"),
];

/// Every conventional drive's flash timing.
pub const FLASH_PRESETS: [FlashPreset; 2] = [
    FlashPreset { name: "980pro", summary: "Samsung 980 PRO 2 TB (conventional): buffer and controller fitted to its fio writes", flash: PRO980_FLASH, sources: PRO980_SOURCES },
    FlashPreset { name: "sn540", summary: "WD Ultrastar DC SN540 (conventional): buffer and controller fitted to its fio runs", flash: SN540_FLASH, sources: SN540_SOURCES },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flash_preset_is_valid_and_every_figure_says_where_it_comes_from() {
        for p in FLASH_PRESETS {
            p.flash.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(p.flash.controller.enabled(), "{}: a fitted drive has its write buffer", p.name);
            let figures = p.figures();
            for s in p.sources {
                assert!(figures.iter().any(|f| f.name == s.0), "{}: a source for {:?}, which is no figure of it", p.name, s.0);
            }
            assert!(figures.iter().all(|f| f.source != "no source gives it"), "{}", p.name);
            assert!(!figures.iter().any(|f| f.name == "reset"), "{}: no zone management on a conventional drive", p.name);
        }
    }
}
