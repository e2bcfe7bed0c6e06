//! A real S3-compatible server for the tests: s3s-fs (Apache-2.0, from crates.io), which keeps
//! every object as a file under its root directory, so tests write Parquet files there directly
//! and read them over S3. Shared by the `needle` command's tests and DataFusion's (which include
//! this file by its path).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The version `make s3-test-server` and `make s3-server` install.
const VERSION: &str = "0.14.1";
pub const ACCESS_KEY: &str = "needle";
pub const SECRET_KEY: &str = "needle-secret";

/// A running server, stopped (by its pid) when dropped.
pub struct S3Server {
    child: Child,
    root: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

/// `NEEDLE_S3_SERVER`, else the cache's build for the tests (`make s3-test-server`), else its
/// optimized build for the benchmarks (`make s3-server`).
fn binary() -> PathBuf {
    if let Ok(p) = std::env::var("NEEDLE_S3_SERVER") {
        return PathBuf::from(p);
    }
    let cache = std::env::var("NEEDLE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").expect("HOME is set")).join(".cache/needle")
        });
    let test_build = cache.join(format!("s3s-fs-{VERSION}-debug/bin/s3s-fs"));
    let optimized = cache.join(format!("s3s-fs-{VERSION}/bin/s3s-fs"));
    if !test_build.exists() && optimized.exists() {
        optimized
    } else {
        test_build
    }
}

impl S3Server {
    /// Starts a server on a free loopback port, with an empty root directory.
    pub fn start() -> S3Server {
        let bin = binary();
        assert!(
            bin.exists(),
            "the S3-compatible test server is not at {}: install it with `make s3-test-server` \
             (or set NEEDLE_S3_SERVER to an s3s-fs binary)",
            bin.display()
        );
        let root = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let server = S3Server {
            child,
            root,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "s3s-fs did not listen on port {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Creates a bucket and returns its directory: its objects are the files below it.
    pub fn bucket(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The server's root directory.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The environment variables an S3 client reads, for this server (`secret` as the key).
    pub fn env_with_secret(&self, secret: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", secret.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// The environment variables an S3 client reads, for this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        self.env_with_secret(SECRET_KEY)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
