//! Freezing a server process (SIGSTOP) for tests that need it to stop answering
//! while its connections stay open.

use std::time::{Duration, Instant};

/// Stops process `pid` and returns once every one of its threads is stopped. kill(2)
/// returns before the stop takes effect: the signal wakes one thread, which stops the
/// others, and until then a thread already running goes on (on a busy machine, for
/// milliseconds, long enough to answer a request).
pub fn freeze(pid: u32) {
    send(pid, libc::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !all_stopped(pid) {
        assert!(
            Instant::now() < deadline,
            "process {pid} not stopped 10 s after SIGSTOP"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Lets a [`freeze`]d process go on.
pub fn thaw(pid: u32) {
    send(pid, libc::SIGCONT);
}

fn send(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid the test started and a valid signal number.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(
        rc,
        0,
        "kill {sig} {pid}: {}",
        std::io::Error::last_os_error()
    );
}

/// Whether every thread of `pid` is in the stopped state (`T`).
fn all_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            // `pid (comm) state ...`: the name may hold spaces and parentheses.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "T" || state == "t")
        })
    })
}
