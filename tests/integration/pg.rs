//! Throwaway PostgreSQL clusters for the shared-store tests: `initdb` and `pg_ctl` from
//! Debian's postgresql, in a temporary folder, listening on a unix socket in it only (no
//! system service, no TCP unless asked). Stopped and removed on drop.

use std::path::PathBuf;
use std::process::Command;

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Extra `postgres` settings (`-c key=value`) it runs with.
    settings: Vec<String>,
}

/// The newest PostgreSQL installed (`/usr/lib/postgresql/N/bin`), else `pg_ctl` on PATH.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).filter(|p| p.join("initdb").exists()).collect())
        .unwrap_or_default();
    found.sort_by_key(|p| p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok()));
    found.pop().unwrap_or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().expect("PostgreSQL is installed (scripts/setup installs it)");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// A command run as the `postgres` user when this is root (initdb refuses root).
fn as_owner(program: PathBuf) -> Command {
    if rustix::process::geteuid().is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

impl Cluster {
    /// A new cluster, started, on a unix socket in its folder.
    pub fn start() -> Cluster {
        Cluster::start_with(&[])
    }

    /// The same, with extra `postgres` settings (`key=value`).
    pub fn start_with(settings: &[&str]) -> Cluster {
        let cluster = Cluster::init(settings);
        cluster.up();
        cluster
    }

    /// A new cluster, not started yet (see [`Cluster::up`]).
    pub fn init(settings: &[&str]) -> Cluster {
        let dir = tempfile::Builder::new().prefix("askuser-pg").tempdir().unwrap();
        if rustix::process::geteuid().is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres").arg(dir.path());
                    c
                },
                "chown",
            );
        }
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
            if rustix::process::geteuid().is_root() {
                run(
                    {
                        let mut c = Command::new("chown");
                        c.arg("postgres").arg(&path);
                        c
                    },
                    "chown",
                );
            }
        }
    }

    /// Starts it again (after [`Cluster::down`]).
    pub fn up(&self) {
        let mut options = format!("-k {} -c listen_addresses='' -c fsync=off -c max_connections=200", self.dir.path().display());
        for s in &self.settings {
            options.push_str(&format!(" -c {s}"));
        }
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(["-o", &options, "-l"]).arg(self.dir.path().join("log")).args(["-w", "start"]);
        run(c, "pg_ctl start");
    }

    /// Stops it at once, as a crash would (`-m immediate`).
    pub fn down(&self) {
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(["-m", "immediate", "-w", "stop"]);
        run(c, "pg_ctl stop");
    }

    /// The URL of database `db` in it.
    pub fn url(&self, db: &str) -> String {
        format!("postgresql://askuser@/{db}?host={}", self.dir.path().display())
    }

    /// A new empty database in it; its URL.
    pub async fn database(&self, name: &str) -> String {
        create_database(&self.url("postgres"), name).await;
        self.url(name)
    }
}

/// `CREATE DATABASE name` on the server at `admin` (a URL of an existing database).
pub async fn create_database(admin: &str, name: &str) {
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls).await.expect("the test cluster is up");
    tokio::spawn(connection);
    client.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await.expect("a new database");
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut c = as_owner(self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(["-m", "immediate", "stop"]);
        let _ = c.output();
    }
}
