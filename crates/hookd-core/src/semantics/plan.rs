//! Execution plans: which hooks run for one firing, and whether sequentially (spec §3).

use std::sync::Arc;

use crate::event::HookEventName;
use crate::model::HookEntry;

/// The hooks one firing runs, in plan order, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The event that fired.
    pub event: HookEventName,
    /// The hooks to run, de-duplicated, in precedence then definition order.
    pub hooks: Vec<Arc<HookEntry>>,
    /// Run one at a time in plan order (any matching definition said `sequential: true`).
    pub sequential: bool,
}
