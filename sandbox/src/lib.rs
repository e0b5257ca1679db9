//! The sandbox's own parts: in-memory stores that are real, selectable implementations of the
//! store ports (not test fakes), used by `svc sandbox` and by the contract suite.

mod memory;

pub use memory::MemoryStore;
