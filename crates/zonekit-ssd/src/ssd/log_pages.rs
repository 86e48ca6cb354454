//! FDP's log pages (20h-23h) as the model's state gives them: configuration, reclaim unit
//! handle usage, statistics and events; none for a conventional SSD.

use super::Ssd;
use crate::config::rgif;
use crate::log::{ConfigLog, EventsLog, StatsLog, UsageLog};

impl Ssd {
    /// FDP's log pages; `None` for a conventional SSD, which has no FDP configuration.
    pub fn config_log(&self) -> Option<ConfigLog> {
        let c = self.config();
        c.is_fdp().then(|| ConfigLog {
            rgif: rgif(c.reclaim_groups),
            nrg: c.reclaim_groups,
            nruh: c.handles.len() as u16,
            runs: c.ru_blocks() * c.block_size_bytes as u64,
            ruh_types: c.handles.clone(),
        })
    }

    pub fn usage_log(&self) -> Option<UsageLog> {
        self.config().is_fdp().then(|| UsageLog { attributes: self.ruh_usage().to_vec() })
    }

    pub fn stats_log(&self) -> Option<StatsLog> {
        let c = self.counters();
        let b = self.block_bytes();
        self.config().is_fdp().then(|| StatsLog { hbmw: c.host_blocks * b, mbmw: c.media_blocks() * b, mbe: c.erases * self.config().ru_blocks() * b })
    }

    pub fn events_log(&self) -> Option<EventsLog> {
        let (events, total) = self.events();
        self.config().is_fdp().then(|| EventsLog { total, events: events.iter().copied().collect() })
    }
}
