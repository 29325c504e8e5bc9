//! Users made for one test (what another user can do to coloc's files):
//! created with `useradd`, removed with `userdel`. Shared with the CLI's tests.

use std::path::Path;
use std::time::Duration;

/// A user made for one test with `useradd` (tests of what another user can do
/// to coloc's files), removed with `userdel` when dropped.
pub struct TestUser {
    pub name: String,
    pub uid: u32,
}

impl TestUser {
    /// A new system user named after `tag`; None, with the reason printed, when
    /// this test does not run as root or `useradd` fails.
    pub fn create(tag: &str) -> Option<TestUser> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: creating a user needs root");
            return None;
        }
        let name = format!("coloc{tag}{}", std::process::id() % 100_000);
        let mut last = None;
        // Parallel tests take turns at /etc/passwd's lock.
        for _ in 0..20 {
            let status = std::process::Command::new("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                ])
                .arg(&name)
                .status();
            match status {
                Ok(s) if s.success() => {
                    let uid = nix::unistd::User::from_name(&name)
                        .ok()
                        .flatten()
                        .expect("the user just created")
                        .uid
                        .as_raw();
                    return Some(TestUser { name, uid });
                }
                other => last = Some(other),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("skipped: useradd {name}: {last:?}");
        None
    }

    /// Gives `path` (not following a symlink) to this user.
    pub fn chown(&self, path: &Path) {
        std::os::unix::fs::lchown(path, Some(self.uid), None).expect("lchown");
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        for _ in 0..20 {
            let status = std::process::Command::new("userdel")
                .arg(&self.name)
                .status();
            if status.is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove the test user {}", self.name);
    }
}
