//! The processes a benchmark measures: `earshot serve`, the Kokoro container's server, the AWS
//! stand-ins. Each runs in a process group of its own, is told to stop when the benchmark process
//! dies (`PR_SET_PDEATHSIG`), and is stopped with its group when dropped, so that nothing outlives
//! a run however it ends. Its CPU time and resident memory are read from `/proc`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Service {
    pub name: String,
    pub log: PathBuf,
    child: Child,
    pub started: Instant,
}

impl Service {
    /// Starts `command`, its output going to `<log_dir>/<name>.log`.
    pub fn spawn(name: &str, mut command: Command, log_dir: &Path) -> Result<Service, String> {
        let log = log_dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        command.stdin(Stdio::null()).stdout(file).stderr(err).process_group(0);
        // SAFETY: prctl is async-signal-safe; the closure touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let started = Instant::now();
        let child = command.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Service { name: name.to_string(), log, child, started })
    }

    /// Starts `command` with pipes to its standard input and output (its errors going to the log), for a
    /// process the benchmark talks to a line at a time.
    pub fn spawn_piped(name: &str, mut command: Command, log_dir: &Path) -> Result<(Service, ChildStdin, ChildStdout), String> {
        let log = log_dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(file).process_group(0);
        // SAFETY: as in `spawn`.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let started = Instant::now();
        let mut child = command.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
        let (stdin, stdout) = (child.stdin.take().expect("piped"), child.stdout.take().expect("piped"));
        Ok((Service { name: name.to_string(), log, child, started }, stdin, stdout))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `url` answers with a success status, asking every `poll`, or fails if the process
    /// ends first. Returns the time from the process's start to that answer.
    pub async fn wait_ready(&mut self, url: &str, timeout: Duration, poll: Duration) -> Result<Duration, String> {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().map_err(|e| e.to_string())?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(r) = client.get(url).send().await {
                if r.status().is_success() {
                    return Ok(self.started.elapsed());
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{} stopped ({status}) before it was ready; see {}", self.name, self.log.display()));
            }
            if Instant::now() > deadline {
                return Err(format!("{} was not ready within {timeout:?}; see {}", self.name, self.log.display()));
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// CPU time (user + system) the process has used, in milliseconds.
    pub fn cpu_ms(&self) -> Option<f64> {
        cpu_ms(self.pid())
    }

    /// Resident memory, in kilobytes.
    pub fn rss_kb(&self) -> Option<u64> {
        rss_kb(self.pid())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let group = self.child.id() as i32;
        // SAFETY: signalling a process group we created.
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// User + system CPU time of a process from `/proc/<pid>/stat`, in milliseconds.
pub fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are space-separated.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((utime + stime) * 1000.0 / ticks)
}

/// Resident memory of a process from `/proc/<pid>/status`, in kilobytes.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_cpu_and_memory() {
        let pid = std::process::id();
        let before = cpu_ms(pid).expect("cpu time");
        let mut x = 0u64;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(cpu_ms(pid).unwrap() >= before);
        assert!(rss_kb(pid).expect("rss") > 100);
    }

    #[test]
    fn a_dropped_service_is_stopped_with_its_children() {
        let dir = std::env::temp_dir();
        let mut command = Command::new("sh");
        command.arg("-c").arg("sleep 30 & sleep 30");
        let service = Service::spawn("bench-test-sleeper", command, &dir).expect("spawn");
        let pid = service.pid();
        assert!(rss_kb(pid).is_some());
        drop(service);
        assert!(rss_kb(pid).is_none(), "the process is gone");
        // No process of the group remains (once init has reaped the orphans).
        let group = pid as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        while unsafe { libc::kill(-group, 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(unsafe { libc::kill(-group, 0) }, -1, "a process of the group outlived it");
    }
}
