//! What goes to the terminal while a run is going.

pub mod env;
pub mod progress;
