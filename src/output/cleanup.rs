//! `faultscale cleanup`: what was kept, removed or would be removed, one line a tree.

use std::path::Path;

use anyhow::Result;

use crate::cgroup::cleanup::{self, Verdict};
use crate::cgroup::{self, BaseSpec, VersionChoice};

/// Said of what a dry run would remove without root, where the real run would remove nothing.
const NEEDS_ROOT: &str = ", as root: removing it needs root (sudo faultscale cleanup)";

/// Removes (or with `dry_run` lists) dead runs' trees under the base; returns whether the base
/// is now free of them (false when one was kept or could not be removed, or, in a dry run
/// without root, when one would be removed: the real one could not).
pub fn run(dry_run: bool, version: VersionChoice, base: &str) -> Result<bool> {
    let root_user = nix::unistd::geteuid().is_root();
    let hierarchy = cgroup::detect()?.memory_hierarchy(version)?;
    let base_dir = cgroup::resolve_base(&hierarchy, &BaseSpec::parse(base)?)?;
    if !dry_run {
        crate::run::require_root(
            "cleanup",
            "to remove the cgroups dead runs left (it creates none); run it with sudo, or --dry-run to list them",
        )?;
    }
    let mut failed = false;
    let mut kept = false;
    let leftovers = cleanup::find(&base_dir);
    if leftovers.is_empty() {
        out!("no faultscale cgroups under {}", base_dir.display());
    }
    for leftover in leftovers {
        let path = leftover.top.display();
        match &leftover.verdict {
            Verdict::RunAlive => {
                kept = true;
                out!("kept {path}: its run ({}) is still alive", live_owner(leftover.owner_pid))
            }
            Verdict::HasProcesses(dir) => {
                kept = true;
                out!("kept {path}: {} still has processes", dir.display())
            }
            Verdict::Removable if dry_run => {
                kept |= !root_user;
                out!("would remove {path}{}", if root_user { "" } else { NEEDS_ROOT })
            }
            Verdict::Removable => match cleanup::remove(&leftover) {
                Ok(()) => out!("removed {path}"),
                Err(e) => {
                    failed = true;
                    say!("faultscale: error: {e:#}");
                }
            },
        }
    }
    Ok(!failed && !kept)
}

/// The live run's pid as its directory names it: a measuring harness (`run::HARNESS_NAME`;
/// "faultscale" before it named itself) with that pid in this PID namespace is the run itself;
/// else the pid is as the run saw itself, in a namespace of its own.
fn live_owner(pid: i32) -> String {
    owner_text(pid, std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().as_deref())
}

fn owner_text(pid: i32, comm: Option<&str>) -> String {
    match comm.map(str::trim) {
        Some(name) if name == crate::run::HARNESS_NAME || name == "faultscale" => format!("pid {pid}"),
        _ => format!("pid {pid} in its own PID namespace"),
    }
}

/// Removes (or lists) run directories a dead file-workload run left in `tmpdir`; returns
/// whether the directory is now free of them (false when one could not be removed, or is
/// another kernel's, or a live run's: kept and named; in a dry run without root, one to remove).
pub fn run_directories(dry_run: bool, tmpdir: &Path) -> bool {
    use crate::run::files::Found;
    let root_user = nix::unistd::geteuid().is_root();
    let mut clean = true;
    for found in crate::run::files::leftovers(tmpdir) {
        let dir = match found {
            Found::Kept { dir, why } => {
                out!("kept {}: {why}; remove it by hand once no run of that kernel uses it", dir.display());
                clean = false;
                continue;
            }
            Found::Live(dir) => {
                out!("kept {}: its run is still alive (it holds the directory's lock)", dir.display());
                clean = false;
                continue;
            }
            Found::Leftover(dir) => dir,
        };
        if dry_run {
            clean &= root_user;
            out!("would remove {}{}", dir.display(), if root_user { "" } else { NEEDS_ROOT });
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => out!("removed {}", dir.display()),
            Err(e) => {
                clean = false;
                say!("faultscale: error: removing {}: {e}", dir.display());
            }
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_runs_pid_is_said_in_another_namespace_only_when_it_is() {
        assert_eq!(owner_text(4242, Some("faultscale\n")), "pid 4242");
        assert_eq!(owner_text(4242, Some("faultscale-run\n")), "pid 4242");
        // A worker's pid is not its run's.
        assert_eq!(owner_text(4242, Some("faultscale-wkr\n")), "pid 4242 in its own PID namespace");
        assert_eq!(owner_text(4242, Some("bash\n")), "pid 4242 in its own PID namespace");
        assert_eq!(owner_text(4242, None), "pid 4242 in its own PID namespace");
    }
}
