//! Cgroup layout detection and the tree of cgroups one run creates.
//!
//! cgroups-rs is not used: on this project's hosts it is unsound in the ways that matter here
//! (it misses hybrid hosts, reads missing files as 0, writes subtree_control of every parent on
//! v2, escapes cgroupfs on paths with a leading `/`). What faultscale needs is mkdir, rmdir and
//! a handful of writes, each read back; that is done by hand in `fs.rs` and `tree.rs`.

pub mod base;
pub mod cleanup;
pub mod fs;
pub mod knobs;
pub mod layout;
pub mod lock;
pub mod room;
pub mod tree;

pub use base::{BaseSpec, VersionChoice, resolve_base};
pub use layout::{Detected, Hierarchy, Layout, Version, detect};
pub use tree::{Leaf, Tree};
