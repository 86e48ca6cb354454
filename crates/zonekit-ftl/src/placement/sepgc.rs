//! SepGC: user writes to one class, GC writes to another (the classic separation).

use super::{BlockCtx, Placement};

pub struct SepGc;

impl Placement for SepGc {
    fn name(&self) -> String {
        "sepgc".into()
    }
    fn classes(&self) -> usize {
        2
    }
    fn user_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        0
    }
    fn gc_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        1
    }
}
