//! `faultscale cleanup`: what was kept, removed or would be removed, one line a tree.

use anyhow::Result;

use crate::cgroup::cleanup::{self, Verdict};
use crate::cgroup::{self, BaseSpec, VersionChoice};

/// Removes (or with `dry_run` lists) dead runs' trees under the base; returns whether every
/// removal asked for succeeded.
pub fn run(dry_run: bool, version: VersionChoice, base: &str) -> Result<bool> {
    let hierarchy = cgroup::detect()?.memory_hierarchy(version)?;
    let root = cgroup::resolve_base(&hierarchy, &BaseSpec::parse(base)?)?;
    if !dry_run {
        crate::run::require_root("cleanup")?;
    }
    let mut failed = false;
    let leftovers = cleanup::find(&root);
    if leftovers.is_empty() {
        println!("no faultscale cgroups under {}", root.display());
    }
    for leftover in leftovers {
        let path = leftover.top.display();
        match leftover.verdict {
            Verdict::OwnerAlive(pid) => println!("kept {path}: its run (pid {pid}) is still alive"),
            Verdict::HasProcesses(dir) => println!("kept {path}: {} still has processes", dir.display()),
            Verdict::Removable if dry_run => println!("would remove {path}"),
            Verdict::Removable => match cleanup::remove(&leftover.top) {
                Ok(()) => println!("removed {path}"),
                Err(e) => {
                    failed = true;
                    eprintln!("faultscale: error: {e:#}");
                }
            },
        }
    }
    Ok(!failed)
}
