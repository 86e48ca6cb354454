//! What the timing model is configured with: the flash ([`FlashConfig`]) and the controller in
//! front of it ([`ControllerConfig`]), and [`Dies`], the busy-until times of the flash's dies
//! and channels that [`crate::timing`] and [`crate::controller`] both charge.

use serde::{Deserialize, Serialize};

use crate::{DeviceError, Result};

/// The flash behind a zoned device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlashConfig {
    pub channels: u32,
    pub dies_per_channel: u32,
    /// The program unit (a multi-plane page where the device programs planes together).
    pub page_size_bytes: u32,
    pub pages_per_block: u32,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    /// Transfer rate of one channel.
    pub channel_bytes_per_sec: u64,
    /// How many dies a zone's pages are striped over.
    pub dies_per_zone: u32,
    /// The controller in front of the flash (write buffer, engines, zone management costs):
    /// [`ControllerConfig::NONE`] for the plain flash model.
    #[serde(default)]
    pub controller: ControllerConfig,
}

impl FlashConfig {
    pub fn die_count(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DeviceError::InvalidGeometry(m));
        if self.channels == 0 || self.dies_per_channel == 0 {
            return bad("flash needs at least one channel and one die per channel".into());
        }
        if self.page_size_bytes == 0 || self.pages_per_block == 0 {
            return bad("flash page size and pages per block must be positive".into());
        }
        if self.channel_bytes_per_sec == 0 {
            return bad("channel bandwidth must be positive".into());
        }
        if self.dies_per_zone == 0 || self.dies_per_zone > self.die_count() {
            return bad(format!("a zone striped over {} dies on flash with {} dies", self.dies_per_zone, self.die_count()));
        }
        let c = &self.controller;
        if c.enabled() {
            if c.stripe_dies == 0 || c.stripe_dies > self.dies_per_zone {
                return bad(format!("a stripe over {} dies of a zone striped over {}", c.stripe_dies, self.dies_per_zone));
            }
            let stripe = self.page_size_bytes as u64 * c.stripe_dies as u64;
            if c.write_buffer_bytes < 2 * stripe {
                return bad(format!("a {}-byte write buffer holds less than two {stripe}-byte stripes", c.write_buffer_bytes));
            }
        }
        Ok(())
    }

    /// Bytes one stripe holds under the controller model (one page without it).
    pub fn stripe_bytes(&self) -> u64 {
        self.page_size_bytes as u64 * self.controller.stripe_dies.max(1) as u64
    }

    pub(crate) fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000 / self.channel_bytes_per_sec as u128) as u64
    }
}

/// The controller's figures; zero everywhere ([`ControllerConfig::NONE`]) means "not
/// modelled": the device is the plain flash model. A figure only applies when
/// `write_buffer_bytes` is set.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ControllerConfig {
    /// The in-order dispatcher's time per command.
    pub dispatch_ns: u64,
    /// The write engine's time per write command.
    pub write_ns: u64,
    /// The write engine's time per zone append command.
    pub append_ns: u64,
    /// An append of fewer bytes than `short_append_bytes` costs the engine `short_append_ns`
    /// more (0: none). The ZN540's 4 KiB appends take 0.8 µs longer than its 8 KiB ones at
    /// QD1 and saturate at 132 KIOPS where 8 KiB appends reach the flash's bandwidth (147
    /// KIOPS); its writes show no such difference.
    pub short_append_bytes: u64,
    pub short_append_ns: u64,
    /// Engine time a short append holds after its own completion is on its way: the ZN540's
    /// 8 KiB appends pass its engine in bursts of about 5.5 µs each (their p50 at QD4 is
    /// 21.4 µs), where 4 KiB appends take 7.6 µs each at any depth, far more than the 0.8 µs
    /// they add to a lone append's latency; the rest is work the engine does after it.
    pub short_append_after_ns: u64,
    /// Extra engine time per write or append while another one is in flight.
    pub handoff_ns: u64,
    /// Mean of the exponential spread added to each write or append's engine time.
    pub jitter_ns: u64,
    /// From the end of the engine to a write's completion (at least).
    pub write_done_ns: u64,
    /// One write or append in `late_one_in` (drawn per command, 0: none) completes `late_ns`
    /// later, holding nothing else up: the 980 PRO's writes have a tight body (p99.5 within
    /// 0.6 µs of p50 at QD1) and a separate tail 10-13 µs above it from p99.9, the same share
    /// at QD16 as at QD1 (so not a stall of the engine, which would delay the queue behind).
    pub late_one_in: u32,
    pub late_ns: u64,
    /// From the end of the engine to an append's completion (at least).
    pub append_done_ns: u64,
    /// A write's bytes beyond the first `host_overlap_bytes` cross the host link at this
    /// rate before it completes (0: instantly).
    pub host_bytes_per_sec: u64,
    /// Bytes of a write whose transfer overlaps the command's processing.
    pub host_overlap_bytes: u64,
    /// The link carries one write's bytes at a time: a write behind another's transfer waits
    /// for it. Fitted: a drive none of whose fit runs of 16 KiB or more with others in flight
    /// has its p50 below the time the bytes in flight take over the link (the ZN540 and the
    /// SN540; the 980 PRO's go as low as 0.93 of it, so its transfers overlap).
    pub host_link_serial: bool,
    /// From the end of a read's flash transfer to its completion.
    pub read_done_ns: u64,
    /// One page in this many (0: none; drawn per read, as which pages those are is not in the
    /// data) takes `slow_page_read_ns` longer to sense: on TLC flash with 2-3-2 coding one of
    /// a wordline's three pages needs three read levels where the others need two.
    pub slow_page_one_in: u32,
    pub slow_page_read_ns: u64,
    /// The write buffer; 0 means no controller model at all.
    pub write_buffer_bytes: u64,
    /// Dies programmed together: a stripe is one page on each.
    pub stripe_dies: u32,
    /// Extra time of the first write or append to a zone that is not open.
    pub implicit_open_ns: u64,
    /// Explicit open, close, and finish of an empty zone (after dispatch).
    pub open_ns: u64,
    pub close_ns: u64,
    pub finish_empty_ns: u64,
    /// Closing a written zone's open flash before a finish pads it.
    pub seal_ns: u64,
    /// The same before a reset of an open zone with programmed data, not yet full (the
    /// ZN540's costs 0.8 ms more than its finish's).
    pub reset_seal_ns: u64,
    /// A reset of a zone that was opened or written, plus a cost per MiB the host wrote.
    pub reset_ns: u64,
    pub reset_ns_per_mib: u64,
    /// Mean of the exponential spread added to a reset of a zone the host wrote to.
    pub reset_jitter_ns: u64,
    /// One stripe program in this many (drawn at random, 0: none) is slow: it takes an
    /// exponential time of mean `slow_stripe_ns` more on its dies (the drive's back end
    /// stalling now and then, which shows only once the buffer is full).
    pub slow_stripe_one_in: u32,
    pub slow_stripe_ns: u64,
    /// When a programmed page's bytes leave the write buffer.
    pub buffer_release: BufferRelease,
    /// Seed of the jitter's generator (the slow stripes' is derived from it).
    pub seed: u64,
}

/// When a programmed page gives its bytes back to the write buffer (`controller.rs` says why
/// the second).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferRelease {
    /// All of a stripe's bytes when its program ends.
    #[default]
    AtProgramEnd,
    /// Each page's bytes evenly over its die's program, from its start to its end.
    OverProgram,
}

impl ControllerConfig {
    /// Not modelled: the plain flash model.
    pub const NONE: ControllerConfig = ControllerConfig {
        dispatch_ns: 0,
        write_ns: 0,
        append_ns: 0,
        short_append_bytes: 0,
        short_append_ns: 0,
        short_append_after_ns: 0,
        handoff_ns: 0,
        jitter_ns: 0,
        write_done_ns: 0,
        late_one_in: 0,
        late_ns: 0,
        append_done_ns: 0,
        host_bytes_per_sec: 0,
        host_overlap_bytes: 0,
        host_link_serial: false,
        read_done_ns: 0,
        slow_page_one_in: 0,
        slow_page_read_ns: 0,
        write_buffer_bytes: 0,
        stripe_dies: 0,
        implicit_open_ns: 0,
        open_ns: 0,
        close_ns: 0,
        finish_empty_ns: 0,
        seal_ns: 0,
        reset_seal_ns: 0,
        reset_ns: 0,
        reset_ns_per_mib: 0,
        reset_jitter_ns: 0,
        slow_stripe_one_in: 0,
        slow_stripe_ns: 0,
        buffer_release: BufferRelease::AtProgramEnd,
        seed: 0,
    };

    pub fn enabled(&self) -> bool {
        self.write_buffer_bytes > 0
    }
}

/// Busy-until times of every die and channel, in virtual nanoseconds, and where a zone's pages
/// go.
#[derive(Clone, Debug)]
pub(crate) struct Dies {
    pub(crate) flash: FlashConfig,
    pub(crate) zone_capacity_bytes: u64,
    pub(crate) die_free_ns: Vec<u64>,
    pub(crate) channel_free_ns: Vec<u64>,
}

impl Dies {
    pub(crate) fn new(flash: FlashConfig, zone_capacity_bytes: u64) -> Dies {
        Dies { flash, zone_capacity_bytes, die_free_ns: vec![0; flash.die_count() as usize], channel_free_ns: vec![0; flash.channels as usize] }
    }

    /// The die of a zone's page: the zone's `dies_per_zone` consecutive dies, round-robin.
    pub(crate) fn die_of(&self, zone: u32, page: u64) -> usize {
        let dies = self.flash.die_count() as u64;
        let first = zone as u64 * self.flash.dies_per_zone as u64 % dies;
        ((first + page % self.flash.dies_per_zone as u64) % dies) as usize
    }

    /// Die *d* sits on channel *d* mod channels.
    pub(crate) fn channel_of(&self, die: usize) -> usize {
        die % self.flash.channels as usize
    }

    /// The die and channel of each of a zone's pages from `page` on, as `die_of` and
    /// `channel_of` give them, stepped without a division: a finish of a near-empty ZN540 zone
    /// programs all 34,464 of its pages.
    pub(crate) fn walk(&self, zone: u32, page: u64) -> PageDies {
        let die = self.die_of(zone, page);
        let slot = (page % self.flash.dies_per_zone as u64) as usize;
        PageDies {
            first_die: self.die_of(zone, 0),
            slot,
            dies_per_zone: self.flash.dies_per_zone as usize,
            dies: self.flash.die_count() as usize,
            channels: self.flash.channels as usize,
            die,
            channel: self.channel_of(die),
        }
    }
}

/// Consecutive pages' (die, channel) pairs of one zone; see [`Dies::walk`].
pub(crate) struct PageDies {
    first_die: usize,
    slot: usize,
    dies_per_zone: usize,
    dies: usize,
    channels: usize,
    die: usize,
    channel: usize,
}

impl Iterator for PageDies {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let here = (self.die, self.channel);
        self.slot += 1;
        if self.slot == self.dies_per_zone {
            self.slot = 0;
            self.die = self.first_die;
            self.channel = self.first_die % self.channels;
        } else if self.die + 1 == self.dies {
            (self.die, self.channel) = (0, 0);
        } else {
            self.die += 1;
            self.channel = if self.channel + 1 == self.channels { 0 } else { self.channel + 1 };
        }
        Some(here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_steps_through_the_same_dies_and_channels_as_die_of() {
        // (channels, dies per channel, dies per zone): a zone over every die, over a few, over
        // a count that does not divide the dies, and channels that do not divide the dies a
        // zone spans.
        for (channels, dies_per_channel, dies_per_zone) in [(8, 4, 32), (8, 4, 16), (3, 5, 7), (4, 1, 1), (6, 2, 5)] {
            let flash = FlashConfig {
                channels,
                dies_per_channel,
                page_size_bytes: 4096,
                pages_per_block: 64,
                read_ns: 1,
                program_ns: 1,
                erase_ns: 1,
                channel_bytes_per_sec: 1,
                dies_per_zone,
                controller: ControllerConfig::NONE,
            };
            let dies = Dies::new(flash, 1 << 20);
            for zone in [0, 1, 5, 13] {
                for start in [0, 1, 6, 31] {
                    let walked: Vec<(usize, usize)> = dies.walk(zone, start).take(100).collect();
                    let direct: Vec<(usize, usize)> = (start..start + 100)
                        .map(|p| {
                            let die = dies.die_of(zone, p);
                            (die, dies.channel_of(die))
                        })
                        .collect();
                    assert_eq!(walked, direct, "{channels}x{dies_per_channel} dies, {dies_per_zone} a zone, zone {zone} from page {start}");
                }
            }
        }
    }
}
