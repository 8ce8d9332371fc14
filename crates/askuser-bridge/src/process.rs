//! Whether another process still runs: for the open calls of `askuser mcp` processes
//! (`mcp/journal.rs`) and for the bridge that wrote `bridge.json` (`config.rs`).

/// Whether process `pid` still runs (a zombie does not: see [`zombie`]). A pid says
/// nothing on its own once the process is gone: the system may give it to another.
pub fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
        let exists = match rustix::process::test_kill_process(pid) {
            Ok(()) => true,
            // It exists but belongs to someone else.
            Err(e) => e == rustix::io::Errno::PERM,
        };
        exists && !zombie(pid.as_raw_nonzero().get())
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Whether process `pid` has ended but not been reaped: an `askuser mcp` whose host was
/// killed is re-parented, and where PID 1 does not reap (many containers) it stays a
/// zombie that signals still reach.
#[cfg(unix)]
fn zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // "PID (COMMAND) STATE …": the command may hold spaces and parentheses.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_some_and(|state| state == "Z" || state == "X")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_not() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX), "no process has this pid");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!alive(pid));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombie_is_not_alive() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for: it stays a zombie until reaped.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(pid), "the zombie {pid} counts as gone");
        drop(child);
    }
}
