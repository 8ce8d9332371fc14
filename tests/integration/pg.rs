//! Throwaway PostgreSQL clusters: `initdb` and `pg_ctl` from Debian's postgresql, in a
//! temporary folder, listening on a unix socket in it only (no system service, no TCP
//! unless asked). Stopped and removed on drop. The shared-store tests and the shared-store
//! benchmark both use this file (the benchmark includes it by path), so it needs std and
//! tempfile only; `scripts/with-postgres` does the same for a whole command.
#![allow(dead_code)] // each user takes what it needs

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Extra `postgres` settings (`key=value`) it runs with, after this file's own.
    settings: Vec<String>,
}

/// The newest PostgreSQL installed (`/usr/lib/postgresql/N/bin`), else `pg_config --bindir`'s.
fn bin_dir() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
                .filter(|(_, p): &(u32, PathBuf)| p.join("initdb").exists())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().expect("PostgreSQL is installed (scripts/setup installs it)");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// Whether PostgreSQL's server programs are installed where [`bin_dir`] looks.
pub fn installed() -> bool {
    let debian =
        std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|d| d.filter_map(|e| e.ok()).any(|e| e.path().join("bin/initdb").exists()));
    debian
        || Command::new("pg_config")
            .arg("--bindir")
            .output()
            .is_ok_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).join("initdb").exists())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A command run as the `postgres` user when this is root (initdb refuses root).
fn as_owner(program: PathBuf) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Runs `c`; its output, or a panic that says what failed.
fn run(mut c: Command, what: &str) -> String {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Gives `path` to the server's user when this is root.
fn give(path: &Path) {
    if is_root() {
        let mut c = Command::new("chown");
        c.arg("postgres").arg(path);
        run(c, "chown");
    }
}

impl Cluster {
    /// A new cluster, started, on a unix socket in its folder.
    pub fn start() -> Cluster {
        Cluster::start_with(&[])
    }

    /// The same, with extra `postgres` settings (`key=value`; `fsync=on` undoes this
    /// file's `fsync=off`).
    pub fn start_with(settings: &[&str]) -> Cluster {
        let cluster = Cluster::init(settings);
        cluster.up();
        cluster
    }

    /// A new cluster, not started yet (see [`Cluster::up`]).
    pub fn init(settings: &[&str]) -> Cluster {
        let dir = tempfile::Builder::new().prefix("askuser-pg").tempdir().expect("a temporary folder");
        give(dir.path());
        let bin = bin_dir();
        let mut initdb = as_owner(bin.join("initdb"));
        initdb.arg("-D").arg(dir.path().join("data")).args(["-A", "trust", "-U", "askuser", "--no-sync"]);
        run(initdb, "initdb");
        Cluster { dir, bin, settings: settings.iter().map(|s| (*s).to_owned()).collect() }
    }

    /// Its data directory (its configuration files are there).
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Gives `files` in the data directory to the server's user, readable by it only.
    pub fn own(&self, files: &[&str]) {
        for f in files {
            let path = self.data().join(f);
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
            give(&path);
        }
    }

    /// Starts it again (after [`Cluster::down`]).
    pub fn up(&self) {
        let mut options = format!("-k {} -c listen_addresses='' -c fsync=off -c max_connections=200", self.dir.path().display());
        for s in &self.settings {
            options.push_str(&format!(" -c {s}"));
        }
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.data()).args(["-o", &options, "-l"]).arg(self.dir.path().join("log")).args(["-w", "start"]);
        run(c, "pg_ctl start");
    }

    /// Stops it at once, as a crash would (`-m immediate`).
    pub fn down(&self) {
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]);
        run(c, "pg_ctl stop");
    }

    /// Freezes (`SIGSTOP`, `pause`) or thaws (`SIGCONT`) the server and its backends: a
    /// database that keeps its connections open and answers nothing.
    pub fn freeze(&self, pause: bool) {
        let pid = std::fs::read_to_string(self.data().join("postmaster.pid")).expect("the server runs");
        let pid = pid.lines().next().expect("postmaster.pid starts with the pid").trim().to_owned();
        let signal = if pause { "-STOP" } else { "-CONT" };
        let mut children = Command::new("pkill");
        children.args([signal, "-P", &pid]);
        let _ = children.status();
        let mut c = Command::new("kill");
        c.args([signal, &pid]);
        run(c, "kill");
    }

    /// The URL of database `db` in it.
    pub fn url(&self, db: &str) -> String {
        format!("postgresql://askuser@/{db}?host={}", self.dir.path().display())
    }

    /// Runs `sql` in database `db` with psql; what it printed.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let mut c = Command::new(self.bin.join("psql"));
        c.arg("-h").arg(self.dir.path()).args(["-U", "askuser", "-d", db, "-X", "-q", "-A", "-t", "-c", sql]);
        run(c, &format!("psql -c {sql:?}"))
    }

    /// A new empty database in it; its URL.
    pub fn database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }

    /// "PostgreSQL 15.18".
    pub fn version(&self) -> String {
        self.psql("postgres", "SHOW server_version").split_whitespace().next().map_or("PostgreSQL".into(), |v| format!("PostgreSQL {v}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.data()).args(["-m", "immediate", "stop"]);
        let _ = c.output();
    }
}
