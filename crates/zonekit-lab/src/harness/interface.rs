//! Which interface a replay hands its data to the flash through: ZNS (the host FTL collects),
//! NVMe FDP (classes become placement handles, the device collects) or a conventional SSD (no
//! hint, the device collects). For FDP and conventional runs the SSD model (`zonekit-ssd`) has
//! exactly the ZNS device's raw capacity — as many reclaim units as the ZNS device has zones,
//! each a zone's size — and the trace's blocks as its logical space, so the three compare at
//! the same raw capacity and the same spare.

// The enum and its one parser live beside the SSD model, so that the C API's device specs
// (which must not pull in the lab) read interfaces the same way.
pub use zonekit_ssd::interface::{Interface, FDP_HANDLES_MAX};
