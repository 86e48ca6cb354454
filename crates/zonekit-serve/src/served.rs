//! What a server asks of the device it serves beyond [`ZonedDevice`]: the timing model's
//! view, when there is one.

use std::time::Instant;

use zonekit_device::fault::FaultyDevice;
use zonekit_device::ZonedDevice;

use crate::timed::WallClockTimed;

pub trait Served: ZonedDevice + Send + 'static {
    /// The timing model's latencies for the counters (none without a model).
    fn model(&self) -> Option<serde_json::Value> {
        None
    }

    /// (operations the model has charged, the wall-clock instant the latest completes): a
    /// pacing server completes a request then, if the request was charged.
    fn modelled_completion(&self) -> Option<(u64, Instant)> {
        None
    }
}

impl Served for FaultyDevice<Box<dyn ZonedDevice + Send>> {}

impl Served for FaultyDevice<WallClockTimed<Box<dyn ZonedDevice + Send>>> {
    fn model(&self) -> Option<serde_json::Value> {
        Some(self.inner().model_json())
    }

    fn modelled_completion(&self) -> Option<(u64, Instant)> {
        Some(self.inner().last_completion())
    }
}
