//! Host commands of any length that a caller submits at times it keeps itself, as a benchmark
//! keeping fio's queue slots does ([`Ssd::write_at`], [`Ssd::read_at`]): beside the model's own
//! closed-loop queue, on the same dies and channels.

use super::{Ssd, UNMAPPED};
use crate::{Pid, SsdError};

impl Ssd {
    /// A host write command of `blocks` metadata-only blocks at `lba`, submitted at
    /// `submit_ns` by a caller that keeps its own queues (a benchmark issuing as fio does):
    /// one command, whatever its length, that completes when its last block does. Returns that
    /// time. The model's own closed-loop queue ([`SsdConfig::queue_depth`]) is bypassed; the
    /// latency is recorded with the others. Needs a timed model.
    pub fn write_at(&mut self, submit_ns: u64, lba: u64, blocks: u64, pid: Option<Pid>) -> Result<u64, SsdError> {
        self.check_powered()?;
        self.check_lba(lba, blocks)?;
        let t = self.timing.as_mut().ok_or_else(|| SsdError::Config("a timed command on a model without flash timing".into()))?;
        // Device GC a write waits for starts no earlier than the command.
        t.host_now_ns = t.host_now_ns.max(submit_ns);
        let mut done = submit_ns;
        for l in lba..lba + blocks {
            done = done.max(self.place_block(l, pid, None, Some(submit_ns))?.expect("timed"));
        }
        self.record_at(submit_ns, done, true);
        Ok(done)
    }

    /// A host read command of `blocks` at `lba` submitted at `submit_ns`, as
    /// [`Ssd::write_at`]: returns when it completes. A block never written costs no flash
    /// time (a drive answers it from its mapping).
    pub fn read_at(&mut self, submit_ns: u64, lba: u64, blocks: u64) -> Result<u64, SsdError> {
        self.check_powered()?;
        self.check_lba(lba, blocks)?;
        let bs = self.cfg.block_size_bytes as u64;
        let mut done = submit_ns;
        for l in lba..lba + blocks {
            let slot = self.l2p[l as usize];
            if slot != UNMAPPED {
                let (ru, off) = self.timing_place(slot);
                let t = self.timing.as_mut().ok_or_else(|| SsdError::Config("a timed command on a model without flash timing".into()))?;
                done = done.max(t.model.read(submit_ns, ru, off, bs));
            }
            self.counters.read_blocks += 1;
        }
        self.record_at(submit_ns, done, false);
        Ok(done)
    }

    fn record_at(&mut self, submit_ns: u64, done_ns: u64, write: bool) {
        if let Some(t) = &mut self.timing {
            t.elapsed_ns = t.elapsed_ns.max(done_ns);
            if write { &mut t.write_latency } else { &mut t.read_latency }.record(done_ns - submit_ns);
        }
    }

    /// When every die and channel of a timed model is idle and every command it timed is
    /// done: where a caller timing its own commands ([`Ssd::write_at`]) starts after a fill.
    pub fn idle_ns(&self) -> Option<u64> {
        self.timing.as_ref().map(|t| t.model.drained_ns().max(t.elapsed_ns).max(t.gc_done_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    fn timed() -> Ssd {
        let flash = zonekit_device::preset::find("femu-zns").expect("exists").flash;
        Ssd::new(SsdConfig { flash: Some(flash), ..SsdConfig::conventional(8192, 0.2, 256) }).unwrap()
    }

    #[test]
    fn a_timed_command_of_many_blocks_is_one_command() {
        // 8 blocks in one command against 8 one-block commands all submitted at 0: the same
        // blocks on the same dies and channels, so the same completion, one latency recorded.
        let (mut one, mut many) = (timed(), timed());
        let done = one.write_at(0, 0, 8, None).unwrap();
        let each: Vec<u64> = (0..8).map(|l| many.write_at(0, l, 1, None).unwrap()).collect();
        assert_eq!(done, *each.iter().max().unwrap());
        assert_eq!(one.counters().host_blocks, 8);
        assert_eq!(one.timing.as_ref().unwrap().write_latency.count, 1);
        // Submitted later, it completes later; never before it is submitted.
        let later = one.write_at(done, 8, 1, None).unwrap();
        assert!(later > done);
        assert!(one.idle_ns().unwrap() >= later);
        one.check_invariants();
    }

    #[test]
    fn a_timed_read_of_unwritten_blocks_costs_nothing_and_of_written_ones_a_sense() {
        let mut ssd = timed();
        assert_eq!(ssd.read_at(100, 0, 4).unwrap(), 100);
        ssd.write_meta(0, None).unwrap();
        let start = ssd.idle_ns().unwrap();
        let flash = ssd.config().flash.unwrap();
        assert!(ssd.read_at(start, 0, 1).unwrap() >= start + flash.read_ns);
        assert!(matches!(ssd.write_at(0, 8191, 2, None), Err(SsdError::OutOfRange { .. })));
        let mut untimed = Ssd::new(SsdConfig::conventional(8192, 0.2, 256)).unwrap();
        assert!(matches!(untimed.write_at(0, 0, 1, None), Err(SsdError::Config(_))));
    }
}
