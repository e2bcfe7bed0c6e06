//! kill -9 at random moments of appends, deletes, removals, flushes and merges (a
//! background merger runs too) loses nothing that was acknowledged; reopening recovers
//! with no manual step.

use needle_index::{hash_i64, Index, Options};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[derive(Default)]
struct Truth {
    /// Values that must be found, per partition.
    live: HashMap<String, HashSet<i64>>,
    /// Partitions whose removal or creation was in flight at a kill: they may or may not be there.
    maybe: HashSet<String>,
}

impl Truth {
    fn apply(&mut self, op: &str, acked: bool) {
        let w: Vec<&str> = op.split(' ').collect();
        match (w[1], acked) {
            ("append", true) => {
                let (base, n): (i64, i64) = (w[3].parse().unwrap(), w[4].parse().unwrap());
                self.live
                    .entry(w[2].to_string())
                    .or_default()
                    .extend(base..base + n);
            }
            ("append", false) => {
                // It may have reached the log before the kill: its partition may exist and
                // then legitimately show up as a false positive of other values.
                self.maybe.insert(w[2].to_string());
            }
            ("delete", _) => {
                // An unacknowledged delete may have happened: stop requiring those values.
                if let Some(s) = self.live.get_mut(w[2]) {
                    for v in w[3].split(',') {
                        s.remove(&v.parse::<i64>().unwrap());
                    }
                }
            }
            ("remove", acked) => {
                self.live.remove(w[2]);
                if !acked {
                    self.maybe.insert(w[2].to_string());
                }
            }
            _ => {}
        }
    }

    fn check(&self, ix: &Index) -> usize {
        let mut n = 0;
        for (id, vals) in &self.live {
            for &v in vals {
                let c = ix.query_hash(hash_i64(v)).unwrap();
                assert!(
                    c.contains(id),
                    "false negative after kill -9: value {v} of {id}; got {c:?}"
                );
                for o in &c {
                    assert!(
                        self.live.contains_key(o) || self.maybe.contains(o),
                        "removed partition {o} returned"
                    );
                }
                n += 1;
            }
        }
        n
    }
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let ix_dir = dir.path().join("ix");
    let exe = env!("CARGO_BIN_EXE_needle-torture");
    let mut truth = Truth::default();
    let mut total_acks = 0;
    let mut rng = 0x1234_5678u64;
    for round in 1..=12u64 {
        let mut child = Command::new(exe)
            .arg(&ix_dir)
            .arg(round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(150 + rng % 600));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "the torture process must only stop by the kill"
        );
        let lines = reader.join().unwrap();
        let mut pending: Option<&str> = None;
        for l in &lines {
            if l == "A" {
                truth.apply(pending.take().expect("ack without op"), true);
                total_acks += 1;
            } else {
                pending = Some(l);
            }
        }
        if let Some(op) = pending {
            truth.apply(op, false);
        }
        let ix = Index::open(&ix_dir, Options::default()).unwrap();
        let checked = truth.check(&ix);
        eprintln!(
            "round {round}: {} lines, {checked} values checked",
            lines.len()
        );
    }
    assert!(
        total_acks > 50,
        "too few operations acknowledged ({total_acks}) for a meaningful test"
    );
    let ix = Index::open(&ix_dir, Options::default()).unwrap();
    ix.flush().unwrap();
    ix.merge().unwrap();
    ix.verify().unwrap();
    truth.check(&ix);
}
